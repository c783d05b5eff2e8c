/**
 * Toolchain homes in the sandbox (issue 8): a JDK, rustup, a virtualenv or corepack's cache named by its
 * variable is visible read-only with the variable set, while a variable that would show a home or its
 * credentials is dropped; `sandbox_env` passes more variables only from the user's config or a trusted
 * project. Against the real bubblewrap and the real binary.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSandbox, type Sandbox } from '../../src/policy/sandbox.js';
import { findProgram } from '../../src/policy/sandbox-limits.js';
import { keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

const BWRAP = findProgram('bwrap', process.env.PATH);
const LIMITS = { cpu_s: 60, memory_mb: 1024, processes: 128, file_size_mb: 64, output_kb: 64 };
const never = new AbortController().signal;
const opened: Sandbox[] = [];
afterAll(async () => {
  for (const box of opened) await box.close();
});

async function shellIn(env: NodeJS.ProcessEnv, command: string, passEnv: string[] = []): Promise<string> {
  const root = tempDir('keel-ws-');
  const box = await createSandbox({
    kind: 'bwrap',
    root,
    writable: [root],
    network: false,
    limits: LIMITS,
    env,
    passEnv,
  });
  opened.push(box);
  const result = await box.run(command, { timeoutS: 20, signal: never });
  return result.stdout;
}

describe.skipIf(!BWRAP)('toolchain homes in the bwrap sandbox', () => {
  const home = tempDir('keel-home-');
  mkdirSync(join(home, '.ssh'));
  writeFileSync(join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY\n');
  const jdk = tempDir('keel-jdk-');
  writeFileSync(join(jdk, 'release'), 'JAVA_VERSION="21"\n');
  const cargo = tempDir('keel-cargo-');
  writeFileSync(join(cargo, 'credentials.toml'), 'token = "cio-secret"\n');
  const env = { PATH: process.env.PATH, HOME: home, JAVA_HOME: jdk, CARGO_HOME: cargo };

  it('a JDK named by JAVA_HOME is there, read-only, with the variable set', async () => {
    const out = await shellIn(
      env,
      'printf "%s|" "$JAVA_HOME"; cat "$JAVA_HOME/release"; touch "$JAVA_HOME/x" 2>/dev/null && echo writable || echo read-only',
    );
    expect(out).toBe(`${jdk}|JAVA_VERSION="21"\nread-only\n`);
  });

  it("a toolchain home's registry token stays hidden", async () => {
    const out = await shellIn(
      env,
      'printf "%s|" "$CARGO_HOME"; cat "$CARGO_HOME/credentials.toml"; echo end',
    );
    expect(out).toBe(`${cargo}|end\n`);
  });

  it('a variable that would show the home or its keys is neither bound nor passed', async () => {
    const hostile = { ...env, GOPATH: home, VIRTUAL_ENV: join(home, '.ssh'), CONDA_PREFIX: '/' };
    const out = await shellIn(
      hostile,
      `echo "[\${GOPATH-unset}] [\${VIRTUAL_ENV-unset}] [\${CONDA_PREFIX-unset}]"; cat ${join(home, '.ssh', 'id_ed25519')} 2>&1 | head -c 0; ls ${home} 2>/dev/null | wc -l`,
    );
    expect(out).toBe('[unset] [unset] [unset]\n0\n');
  });

  it('corepack is told not to prompt and, with no network, not to try', async () => {
    const out = await shellIn(env, 'echo "$COREPACK_ENABLE_DOWNLOAD_PROMPT $COREPACK_ENABLE_NETWORK"');
    expect(out).toBe('0 0\n');
  });

  it('sandbox_env names pass through; everything else stays out', async () => {
    const out = await shellIn(
      { ...env, MY_SETTING: 'on', OPENAI_API_KEY: 'sk-secret' },
      'echo "[$(printenv MY_SETTING || echo unset)] [$(printenv OPENAI_API_KEY || echo unset)]"',
      ['MY_SETTING'],
    );
    expect(out).toBe('[on] [unset]\n');
  });
});

describe.skipIf(!BWRAP)('sandbox_env is trust-gated', () => {
  const probe = (expected: string) =>
    model([
      {
        tool_calls: [
          { name: 'shell', arguments: { command: 'echo "[$(printenv MY_TOKEN || echo unset)]"' } },
        ],
      },
      { text: 'done', expect: { last_tool_result_contains: expected } },
    ]);

  it("an untrusted keel.toml cannot hand keel's variables to the model's commands", async () => {
    const repo = gitRepo({ 'keel.toml': 'sandbox_env = ["MY_TOKEN"]\n' });
    const home = keelHome();
    const server = await probe('[unset]');
    const run = await keel(['edit', ...modelFlags(server), '--json', 'look'], {
      cwd: repo,
      home,
      env: { MY_TOKEN: 'hunter2' },
    });
    expect(run.stderr).toContain('sandbox_env');
    expect(run.stderr).toContain('is not trusted');
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED' });
  });

  it("the user's own config passes them", async () => {
    const repo = gitRepo();
    const home = keelHome('sandbox_env = ["MY_TOKEN"]\n');
    const server = await probe('[hunter2]');
    const run = await keel(['edit', ...modelFlags(server), '--json', 'look'], {
      cwd: repo,
      home,
      env: { MY_TOKEN: 'hunter2' },
    });
    expect(JSON.parse(run.stdout), run.stderr).toMatchObject({ code: 'COMPLETED' });
  });

  it('a name that is not a variable name is a configuration error naming the key', async () => {
    const repo = gitRepo();
    const home = keelHome('sandbox_env = ["MY TOKEN"]\n');
    const server = await probe('never');
    const run = await keel(['edit', ...modelFlags(server), '--json', 'look'], { cwd: repo, home });
    expect(run.code).toBe(2);
    expect(run.stdout + run.stderr).toContain('sandbox_env');
  });
});
