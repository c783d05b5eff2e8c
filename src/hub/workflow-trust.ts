/**
 * Workflows under `keel trust`: every field of a workflow bears authority (which secret starts it, which
 * agents answer, in which mode, what they are told), so a workflow is trusted whole, by hash, like the
 * project config, and the hub runs only a file trusted as it is. `keel trust diff` lists what changed in
 * each workflow against a git revision; an added or changed workflow is an expansion.
 */
import { type TrustState, trustCheck } from '../config/trust.js';
import {
  parseWorkflow,
  readWorkflowFile,
  type Workflow,
  WorkflowError,
  workflowFiles,
} from './workflow-file.js';

export interface WorkflowChange {
  name: string;
  file: string;
  change: 'added' | 'changed' | 'removed' | 'unchanged';
  /** The dotted fields that differ (`trigger.secret_env`, `stages.0.eligible`). */
  fields: string[];
  /** Whether the file as it is now is trusted (removed: not applicable). */
  trust: TrustState | 'n/a';
}

function leaves(value: unknown, prefix: string, out: Map<string, string>): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out);
    return;
  }
  if (Array.isArray(value) && value.some((v) => v !== null && typeof v === 'object')) {
    value.forEach((v, i) => {
      leaves(v, `${prefix}.${i}`, out);
    });
    return;
  }
  out.set(prefix, JSON.stringify(value));
}

/** The dotted fields in which two workflows differ. */
export function changedFields(before: Workflow, after: Workflow): string[] {
  const a = new Map<string, string>();
  const b = new Map<string, string>();
  leaves(before, '', a);
  leaves(after, '', b);
  return [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).sort();
}

/**
 * Each workflow of the project at `root` against its text at a revision (`atBase(name)`: the file's text
 * there, undefined when absent; `baseNames`: the workflows there). Throws WorkflowError for a workflow
 * that is not valid now.
 */
export function workflowChanges(
  root: string,
  trustFile: string,
  atBase: (name: string) => string | undefined,
  baseNames: readonly string[],
): WorkflowChange[] {
  const now = workflowFiles(root);
  const changes: WorkflowChange[] = now.map(({ name, file }) => {
    const { workflow } = readWorkflowFile(file);
    const trust = trustCheck(file, trustFile).state;
    const text = atBase(name);
    if (text === undefined) return { name, file, change: 'added', fields: [], trust };
    let before: Workflow;
    try {
      before = parseWorkflow(text, `${name}.yaml at the base`);
    } catch (err) {
      if (!(err instanceof WorkflowError)) throw err;
      return { name, file, change: 'changed', fields: ['(not a valid workflow at the base)'], trust };
    }
    const fields = changedFields(before, workflow);
    return { name, file, change: fields.length ? 'changed' : 'unchanged', fields, trust };
  });
  for (const name of baseNames)
    if (!now.some((w) => w.name === name))
      changes.push({ name, file: '', change: 'removed', fields: [], trust: 'n/a' });
  return changes;
}
