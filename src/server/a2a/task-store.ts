/**
 * A2A tasks kept in keel's database (table a2a_tasks), so `GetTask` and `ListTasks` still answer
 * after the server restarts. Each row belongs to one project (the server's root) and names the
 * process that ran it: a task left working or input-required by a server that is gone is failed
 * when the next server starts, with the session it ran as, instead of showing "working" forever.
 */
import { type ListTasksRequest, type ListTasksResponse, Task, TaskState } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { alive } from '../../agent/session.js';
import type { Db } from '../../store/db.js';

const ENDED = [
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
];
const PAGE = 50;

interface Row {
  id: string;
  task: string;
  pid: number;
}

export class SqliteTaskStore implements TaskStore {
  constructor(
    private readonly db: Db,
    private readonly project: string,
  ) {}

  async save(task: Task, _context?: ServerCallContext): Promise<void> {
    this.put(task);
  }

  async load(taskId: string, _context?: ServerCallContext): Promise<Task | undefined> {
    const row = this.db
      .prepare('SELECT id, task, pid FROM a2a_tasks WHERE id = ? AND project = ?')
      .get(taskId, this.project) as Row | undefined;
    return row ? Task.fromJSON(JSON.parse(row.task)) : undefined;
  }

  async list(params: ListTasksRequest, _context?: ServerCallContext): Promise<ListTasksResponse> {
    const where = ['project = ?'];
    const args: unknown[] = [this.project];
    if (params.contextId) {
      where.push('context_id = ?');
      args.push(params.contextId);
    }
    if (params.status) {
      where.push('state = ?');
      args.push(params.status);
    }
    if (params.statusTimestampAfter) {
      where.push('updated_at > ?');
      args.push(new Date(params.statusTimestampAfter).toISOString());
    }
    const pageSize = Math.min(100, Math.max(1, params.pageSize || PAGE));
    const offset = offsetOf(params.pageToken);
    const clause = where.join(' AND ');
    const total = (
      this.db.prepare(`SELECT count(*) AS n FROM a2a_tasks WHERE ${clause}`).get(...args) as { n: number }
    ).n;
    const rows = this.db
      .prepare(
        `SELECT id, task, pid FROM a2a_tasks WHERE ${clause} ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?`,
      )
      .all(...args, pageSize, offset) as Row[];
    const tasks = rows.map((r) => {
      const task = Task.fromJSON(JSON.parse(r.task));
      if (!params.includeArtifacts) task.artifacts = [];
      return task;
    });
    const more = offset + rows.length < total;
    return {
      tasks,
      nextPageToken: more ? Buffer.from(`offset:${offset + rows.length}`).toString('base64url') : '',
      pageSize,
      totalSize: total,
    };
  }

  /**
   * Fail every task of this project that a server no longer running left unfinished: its session
   * stopped with that server. Returns how many.
   */
  recover(now = new Date()): number {
    const rows = this.db
      .prepare(`SELECT id, task, pid FROM a2a_tasks WHERE project = ? AND state NOT IN (${ENDED.join(',')})`)
      .all(this.project) as Row[];
    let failed = 0;
    for (const row of rows) {
      if (row.pid !== process.pid && alive(row.pid)) continue;
      const task = Task.fromJSON(JSON.parse(row.task));
      const session = task.metadata?.session_id;
      const text = `ENVIRONMENT_ERROR: the server stopped while this task ran${
        typeof session === 'string'
          ? `; its session ${session} can go on with: keel sessions resume ${session}`
          : ''
      }`;
      task.status = {
        state: TaskState.TASK_STATE_FAILED,
        message: {
          messageId: `recovered-${row.id}`,
          contextId: task.contextId,
          taskId: task.id,
          role: 2, // ROLE_AGENT
          parts: [
            {
              content: { $case: 'text', value: text },
              mediaType: 'text/plain',
              filename: '',
              metadata: undefined,
            },
          ],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
        timestamp: now.toISOString(),
      };
      this.put(task);
      failed++;
    }
    return failed;
  }

  private put(task: Task): void {
    const json = JSON.stringify(Task.toJSON(task));
    const updated = task.status?.timestamp
      ? new Date(task.status.timestamp).toISOString()
      : new Date().toISOString();
    this.db
      .prepare(
        `INSERT INTO a2a_tasks (id, project, context_id, state, task, pid, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET context_id = excluded.context_id, state = excluded.state,
           task = excluded.task, pid = excluded.pid, updated_at = excluded.updated_at
         WHERE a2a_tasks.project = excluded.project`,
      )
      .run(task.id, this.project, task.contextId, task.status?.state ?? 0, json, process.pid, updated);
  }
}

function offsetOf(token: string | undefined): number {
  if (!token) return 0;
  const match = /^offset:(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  return match ? Number(match[1]) : 0;
}
