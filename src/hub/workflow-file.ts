/**
 * A workflow file, `.keel/workflows/NAME.yaml`: read as plain YAML (no anchors, aliases, duplicate keys,
 * custom tags or second documents), then held to a strict schema. Every error names the file, the line
 * and the field. A workflow lets a webhook put agents to work, so the hub runs only a file the user has
 * trusted as it is (`keel trust`, recorded by hash like the project config).
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlias, isMap, isNode, isScalar, LineCounter, parseDocument, visit } from 'yaml';
import * as z from 'zod';
import { trustedHash } from '../config/trust.js';
import { sha256 } from '../store/audit-chain.js';

/** Where a project keeps its workflows, relative to its root. */
export const WORKFLOWS_DIR = join('.keel', 'workflows');

/** A workflow's name: its file name without `.yaml`. */
export const WORKFLOW_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Files bigger than this are refused before parsing: a workflow is a few stages. */
const MAX_BYTES = 64 * 1024;

const DURATION = /^([1-9][0-9]{0,6})(s|m|h|d)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const MAX_TIMEOUT_MS = 30 * UNIT_MS.d;

/** `90s`, `15m`, `2h`, `7d` in milliseconds, or undefined when it is not one. */
export function durationMs(text: string): number | undefined {
  const m = DURATION.exec(text);
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  return ms <= MAX_TIMEOUT_MS ? ms : undefined;
}

const ident = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'expected a name of letters, digits, _ . -');
const envName = z.string().regex(/^[A-Z_][A-Z0-9_]{0,127}$/, 'expected an environment variable name');

const triggerSchema = z.strictObject({
  source: z.enum(['github', 'jira', 'generic']),
  event: z.string().min(1).max(200),
  secret_env: envName,
  signal_secret_env: envName.optional(),
});

const stageSchema = z.strictObject({
  id: ident,
  kind: z.enum(['agent', 'quorum', 'await_signal', 'approval']),
  eligible: z.array(ident).min(1).max(64).optional(),
  min_producers: z.number().int().min(1).max(64).optional(),
  prompt: z.string().min(1).max(16_000).optional(),
  signal: ident.optional(),
  timeout: z
    .string()
    .refine(
      (t) => durationMs(t) !== undefined,
      'expected a duration such as 90s, 15m, 2h or 7d (at most 30d)',
    )
    .optional(),
  agent: ident.optional(),
  mode: z.enum(['ask', 'plan', 'edit']).optional(),
});

type StageKind = z.infer<typeof stageSchema>['kind'];

/** The fields each kind of stage takes (id, kind and timeout go with every kind). */
const FIELDS: Record<StageKind, { required: string[]; allowed: string[] }> = {
  quorum: { required: ['eligible', 'min_producers', 'prompt'], allowed: [] },
  agent: { required: ['agent'], allowed: ['mode', 'prompt'] },
  await_signal: { required: ['signal'], allowed: [] },
  approval: { required: [], allowed: ['prompt'] },
};

const article = (word: string) => (/^[aeiou]/.test(word) ? 'an' : 'a');

const workflowSchema = z
  .strictObject({
    version: z.literal(1),
    trigger: triggerSchema,
    stages: z.array(stageSchema).min(1).max(32),
  })
  .superRefine((wf, ctx) => {
    const seen = new Set<string>();
    wf.stages.forEach((stage, i) => {
      const at = (field: string) => ['stages', i, field];
      if (seen.has(stage.id))
        ctx.addIssue({ code: 'custom', path: at('id'), message: 'a stage id used twice' });
      seen.add(stage.id);
      const { required, allowed } = FIELDS[stage.kind];
      for (const field of required)
        if ((stage as Record<string, unknown>)[field] === undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['stages', i],
            message: `${article(stage.kind)} ${stage.kind} stage needs "${field}"`,
          });
      for (const field of Object.keys(stage))
        if (!['id', 'kind', 'timeout', ...required, ...allowed].includes(field))
          ctx.addIssue({
            code: 'custom',
            path: at(field),
            message: `${article(stage.kind)} ${stage.kind} stage takes no "${field}"`,
          });
      if (stage.eligible && new Set(stage.eligible).size !== stage.eligible.length)
        ctx.addIssue({ code: 'custom', path: at('eligible'), message: 'an agent named twice' });
      if (stage.eligible && stage.min_producers !== undefined && stage.min_producers > stage.eligible.length)
        ctx.addIssue({
          code: 'custom',
          path: at('min_producers'),
          message: `more than the ${stage.eligible.length} eligible agents could ever give`,
        });
    });
    const signals = wf.stages.filter((s) => s.kind === 'await_signal');
    if (signals.length && wf.trigger.signal_secret_env === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['trigger'],
        message: 'an await_signal stage needs "signal_secret_env" (the secret per-run signal keys come from)',
      });
    if (wf.trigger.signal_secret_env !== undefined && wf.trigger.signal_secret_env === wf.trigger.secret_env)
      ctx.addIssue({
        code: 'custom',
        path: ['trigger', 'signal_secret_env'],
        message: 'must differ from "secret_env": whoever reports a signal must not be able to start a run',
      });
    if (new Set(signals.map((s) => s.signal)).size !== signals.length)
      ctx.addIssue({
        code: 'custom',
        path: ['stages'],
        message: 'two await_signal stages wait for the same signal',
      });
  });

export type Workflow = z.infer<typeof workflowSchema>;
export type WorkflowStage = Workflow['stages'][number];

/** A workflow that is not there, not valid or not trusted; `code` is what the hub answers with. */
export class WorkflowError extends Error {
  override name = 'WorkflowError';
  constructor(
    readonly code: 'no_such_workflow' | 'invalid_workflow' | 'untrusted_workflow',
    message: string,
  ) {
    super(message);
  }
}

/** A workflow as read: its name, file, the sha256 of the text parsed, and its validated contents. */
export interface LoadedWorkflow {
  name: string;
  file: string;
  sha256: string;
  workflow: Workflow;
}

/**
 * Parse a workflow's text; `file` names it in errors. Throws WorkflowError('invalid_workflow') on YAML
 * that uses anchors, aliases, tags or duplicate keys, and on anything the schema refuses.
 */
export function parseWorkflow(text: string, file: string): Workflow {
  if (Buffer.byteLength(text) > MAX_BYTES)
    throw invalid(`${file}: larger than ${MAX_BYTES / 1024} KiB; a workflow is a few stages`);
  const lines = new LineCounter();
  // uniqueKeys refuses a key twice; the document is never turned into values while it holds an alias,
  // so an alias bomb costs its own length to read and no more
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const where = (offset: number) => `${file}:${lines.linePos(offset).line}`;
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) throw invalid(`${where(problem.pos[0])}: ${problem.message.split('\n')[0]}`);
  visit(doc, {
    Node(_, node) {
      const at = node.range?.[0] ?? 0;
      if (isAlias(node))
        throw invalid(`${where(at)}: an alias (*${node.source}); workflows take no anchors or aliases`);
      if (node.anchor)
        throw invalid(`${where(at)}: an anchor (&${node.anchor}); workflows take no anchors or aliases`);
      if (node.tag) throw invalid(`${where(at)}: a tag (${node.tag}); workflows take plain YAML`);
    },
  });
  const parsed = workflowSchema.safeParse(doc.toJS({ maxAliasCount: 0 }));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (!issue) throw invalid(`${file}: invalid workflow`);
  const path = issue.path.map((p) => (typeof p === 'number' ? p : String(p)));
  // the deepest node that exists on the issue's path gives the line
  let node: unknown;
  for (let n = path.length; n >= 0 && !isNode(node); n--) node = doc.getIn(path.slice(0, n), true);
  const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
  // an unknown field's line is its key's own
  const pair = isMap(node) ? node.items.find((p) => isScalar(p.key) && p.key.value === keys[0]) : undefined;
  const at = isScalar(pair?.key) ? pair.key : node;
  const offset = isNode(at) ? (at.range?.[0] ?? 0) : 0;
  const field = [...path, ...keys.slice(0, 1)].join('.') || '(top level)';
  const what = keys.length ? `unknown field${keys.length > 1 ? `s ${keys.join(', ')}` : ''}` : issue.message;
  throw invalid(`${where(offset)}: "${field}": ${what}`);
}

function invalid(message: string): WorkflowError {
  return new WorkflowError('invalid_workflow', message);
}

/** The workflow files of a project (regular files named NAME.yaml), by name. */
export function workflowFiles(root: string): { name: string; file: string }[] {
  const dir = join(root, WORKFLOWS_DIR);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith('.yaml') && WORKFLOW_NAME.test(n.slice(0, -5)))
    .sort()
    .map((n) => ({ name: n.slice(0, -5), file: join(dir, n) }));
}

/** Read and parse a workflow file (a link is refused: the file trusted is the file read). */
export function readWorkflowFile(file: string): { text: string; workflow: Workflow } {
  const stat = lstatSync(file, { throwIfNoEntry: false });
  if (!stat) throw new WorkflowError('no_such_workflow', `no workflow file ${file}`);
  if (!stat.isFile()) throw invalid(`${file}: not a regular file (a workflow may not be a link)`);
  const text = readFileSync(file, 'utf8');
  return { text, workflow: parseWorkflow(text, file) };
}

/**
 * Load workflow NAME of the project at `root` for the hub: valid, and trusted as it is now in
 * `trustFile` (the hash trusted must be that of the very text parsed).
 */
export function loadWorkflow(root: string, name: string, trustFile: string): LoadedWorkflow {
  if (!WORKFLOW_NAME.test(name))
    throw new WorkflowError('no_such_workflow', `no workflow named ${JSON.stringify(name)}`);
  const file = join(root, WORKFLOWS_DIR, `${name}.yaml`);
  const { text, workflow } = readWorkflowFile(file);
  const hash = sha256(text);
  const trusted = trustedHash(file, trustFile);
  if (trusted !== hash)
    throw new WorkflowError(
      'untrusted_workflow',
      `${file} ${trusted === undefined ? 'is not trusted' : 'changed since it was trusted'}: review it, then run \`keel trust\` in ${root}`,
    );
  return { name, file, sha256: hash, workflow };
}
