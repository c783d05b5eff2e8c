/**
 * A workflow file is a repository's file that lets webhooks put agents to work: hostile YAML is refused
 * before it becomes values (an alias bomb, duplicate keys, tags), unknown fields are refused with their
 * line, and the hub runs a workflow only once the user has trusted it as it is (`keel trust`, the real binary).
 */
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWorkflow, parseWorkflow, WorkflowError } from '../../src/hub/workflow-file.js';
import { keel, keelHome } from '../e2e/harness.js';
import { git, gitRepo, writeFiles } from '../helpers/tmp.js';

const FLOW = `version: 1
trigger: {source: github, event: pull_request, secret_env: KEEL_WH_GITHUB, signal_secret_env: KEEL_WH_SIGNALS}
stages:
  - {id: review, kind: quorum, eligible: [rev-a, rev-b, rev-c], min_producers: 2, prompt: "Review PR {{pull_request.number}}"}
  - {id: ci, kind: await_signal, signal: ci-result, timeout: 2h}
  - {id: fix, kind: agent, agent: fixer, mode: edit}
`;

function refusal(text: string): string {
  try {
    parseWorkflow(text, 'wf.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(WorkflowError);
    expect((err as WorkflowError).code).toBe('invalid_workflow');
    return (err as Error).message;
  }
  throw new Error('the workflow was accepted');
}

describe('workflow files', () => {
  it("the issue's example is a valid workflow, and the README's is the same one", () => {
    const wf = parseWorkflow(FLOW, 'pr.yaml');
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Workflows from signed webhooks'));
    const example = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    expect(parseWorkflow(example, 'README.md')).toEqual(wf);
    expect(wf.stages.map((s) => s.kind)).toEqual(['quorum', 'await_signal', 'agent']);
    expect(wf.trigger).toEqual({
      source: 'github',
      event: 'pull_request',
      secret_env: 'KEEL_WH_GITHUB',
      signal_secret_env: 'KEEL_WH_SIGNALS',
    });
  });

  it('an alias bomb is refused at its first anchor, before anything is expanded', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 20; i++)
      levels.push(
        `l${i}: &l${i} [${Array(9)
          .fill(i === 1 ? '*a' : `*l${i - 1}`)
          .join(',')}]`,
      );
    // 9^20 strings if expanded: only a refusal that never builds the values can answer
    expect(refusal(`${levels.join('\n')}\nversion: 1\n`)).toBe(
      'wf.yaml:1: an anchor (&a); workflows take no anchors or aliases',
    );
    // an alias to a plain scalar anchor, and a merge key, are refused too
    expect(
      refusal(`version: 1\ntrigger: &t {source: github, event: e, secret_env: S}\nstages: []\n`),
    ).toContain('wf.yaml:2: an anchor (&t)');
    expect(refusal(FLOW.replace('stages:', 'x: {a: 1}\n<<: {b: 2}\nstages:'))).toContain(
      'unknown fields x, <<',
    );
  });

  it('a duplicate key, a tag, a second document and an unknown field are refused with file, line and field', () => {
    expect(refusal(FLOW.replace('stages:', 'version: 1\nstages:'))).toBe(
      'wf.yaml:3: Map keys must be unique',
    );
    expect(refusal(FLOW.replace('event: pull_request', 'event: !!binary cHVsbA=='))).toContain(
      'wf.yaml:2: a tag',
    );
    expect(refusal(`${FLOW}---\nversion: 1\n`)).toContain('wf.yaml:7:');
    expect(refusal(FLOW.replace('min_producers: 2', 'min_producers: 2, elgible: [x]'))).toBe(
      'wf.yaml:4: "stages.0.elgible": unknown field',
    );
    expect(refusal(FLOW.replace('trigger: {', 'trigger: {sekret: x, '))).toBe(
      'wf.yaml:2: "trigger.sekret": unknown field',
    );
    expect(refusal(FLOW.replace('source: github', 'source: gitlab'))).toContain(
      'wf.yaml:2: "trigger.source"',
    );
    // the rules of each kind of stage, and of the secrets
    expect(refusal(FLOW.replace('min_producers: 2', 'min_producers: 4'))).toBe(
      'wf.yaml:4: "stages.0.min_producers": more than the 3 eligible agents could ever give',
    );
    expect(refusal(FLOW.replace('signal: ci-result', 'agent: ci-bot'))).toContain(
      'an await_signal stage needs "signal"',
    );
    expect(
      refusal(FLOW.replace('signal_secret_env: KEEL_WH_SIGNALS', 'signal_secret_env: KEEL_WH_GITHUB')),
    ).toContain('must differ from "secret_env"');
    expect(refusal(FLOW.replace('timeout: 2h', 'timeout: forever'))).toContain(
      '"stages.1.timeout": expected a duration',
    );
  });

  it("an untrusted project's workflow is refused until `keel trust`, and again once it changes", async () => {
    const repo = gitRepo({ 'README.md': '# demo\n', '.keel/workflows/pr.yaml': FLOW });
    const home = keelHome();
    const trustFile = join(home, 'trust.json');
    expect(() => loadWorkflow(repo, 'pr', trustFile)).toThrow(
      expect.objectContaining({
        code: 'untrusted_workflow',
        message: expect.stringContaining('is not trusted'),
      }),
    );
    // the project has no keel.toml: its workflows alone are what `keel trust` trusts
    const trusted = await keel(['trust', '--json'], { cwd: repo, home });
    expect(trusted.stderr).toBe('');
    expect(trusted.code).toBe(0);
    expect(JSON.parse(trusted.stdout).workflows).toEqual([
      {
        name: 'pr',
        file: join(repo, '.keel/workflows/pr.yaml'),
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
    ]);
    expect(loadWorkflow(repo, 'pr', trustFile).workflow.stages).toHaveLength(3);

    // a change to who counts in the quorum is refused until trusted anew, and `keel trust diff` names it
    writeFileSync(join(repo, '.keel/workflows/pr.yaml'), FLOW.replace('rev-c]', 'rev-c, mallory]'));
    expect(() => loadWorkflow(repo, 'pr', trustFile)).toThrow(/changed since it was trusted/);
    const diff = await keel(['trust', 'diff', '--json'], { cwd: repo, home });
    expect(diff.code).toBe(0);
    expect(JSON.parse(diff.stdout).workflows).toEqual([
      {
        name: 'pr',
        file: join(repo, '.keel/workflows/pr.yaml'),
        change: 'changed',
        fields: ['stages.0.eligible'],
        trust: 'changed',
      },
    ]);
    const check = await keel(['trust', 'check'], { cwd: repo, home });
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(
      'workflow pr changed: stages.0.eligible (changed: refused until `keel trust`)',
    );

    // a new workflow beside a keel.toml: diff lists it as added; an invalid one is not trusted, nor anything with it
    writeFiles(repo, { 'keel.toml': 'permission = "ask"\n', '.keel/workflows/ci.yaml': FLOW });
    git(repo, 'add', '-A');
    const added = await keel(['trust', 'diff', '--json'], { cwd: repo, home });
    expect(
      JSON.parse(added.stdout).workflows.map((w: { name: string; change: string }) => [w.name, w.change]),
    ).toEqual([
      ['ci', 'added'],
      ['pr', 'changed'],
    ]);
    writeFiles(repo, { '.keel/workflows/bad.yaml': `${FLOW}extra: 1\n` });
    const refused = await keel(['trust', '--json'], { cwd: repo, home });
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stdout).error).toContain(
      'bad.yaml:7: "extra": unknown field (nothing was trusted)',
    );
    expect(() => loadWorkflow(repo, 'ci', trustFile)).toThrow(/is not trusted/);

    // a workflow that is a link to a file elsewhere is not read, trusted or not
    symlinkSync(join(repo, '.keel/workflows/pr.yaml'), join(repo, '.keel/workflows/linked.yaml'));
    expect(() => loadWorkflow(repo, 'linked', trustFile)).toThrow(/not a regular file/);
    expect(() => loadWorkflow(repo, '../../etc/passwd', trustFile)).toThrow(/no workflow named/);
  });
});
