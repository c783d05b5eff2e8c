/**
 * A stored session as a readable transcript, for `keel sessions export` and the chat's /export: the
 * person's messages (turns numbered as the chat shows them), the answers, each tool call with its
 * decision and outcome, and the diff of every edit. Markdown, or one self-contained HTML page where
 * every text from the log (the model's, a tool's, a file's) is escaped and nothing runs.
 */
import type { SessionRow, StoredEvent } from '../store/event-log.js';
import { inert, inertLine } from './inert.js';
import { TurnCounter } from './turns.js';

export const EXPORT_FORMATS = ['md', 'html'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** One piece of the transcript, before it is written in a format. */
type Block =
  | { kind: 'turn'; n: number; text: string }
  | { kind: 'steer'; text: string }
  | { kind: 'answer'; text: string }
  | {
      kind: 'tool';
      tool: string;
      args: string;
      decision?: string;
      outcome?: string;
      output?: string;
      diff?: string;
    }
  | { kind: 'note'; text: string };

const OUTPUT_LINES = 40;

/** The transcript of a session from its row and events. */
export function renderExport(row: SessionRow, events: StoredEvent[], format: ExportFormat): string {
  const blocks = blocksOf(events);
  return format === 'md' ? markdown(row, blocks) : html(row, blocks);
}

function blocksOf(events: StoredEvent[]): Block[] {
  const turns = new TurnCounter();
  const blocks: Block[] = [];
  const tools = new Map<string, Extract<Block, { kind: 'tool' }>>();
  const tool = (id: string, name: string) => {
    let b = tools.get(id);
    if (!b) {
      b = { kind: 'tool', tool: name, args: '' };
      tools.set(id, b);
      blocks.push(b);
    }
    return b;
  };
  for (const e of events) {
    const d = e.data as Record<string, unknown>;
    const opens = turns.see(e.type);
    switch (e.type) {
      case 'user_message':
        blocks.push(
          opens ? { kind: 'turn', n: turns.count, text: str(d.text) } : { kind: 'steer', text: str(d.text) },
        );
        break;
      case 'assistant_message':
        if (str(d.text).trim()) blocks.push({ kind: 'answer', text: str(d.text).trim() });
        for (const call of (d.tool_calls as Array<{ id: string; name: string; arguments: string }>) ?? [])
          tool(call.id, call.name).args = call.arguments;
        break;
      case 'tool_start': {
        const b = tool(str(d.call_id), str(d.tool));
        if (!b.args) b.args = JSON.stringify(d.args);
        break;
      }
      case 'gate_decision': {
        const b = tool(str(d.call_id), str(d.tool));
        b.decision = `${str(d.decision)}${d.reason ? ` (${str(d.reason)})` : ''}`;
        break;
      }
      case 'tool_result': {
        const b = tool(str(d.call_id), str(d.tool));
        b.outcome = d.is_error ? 'error' : 'ok';
        const out = str(d.output).split('\n');
        b.output =
          out.length > OUTPUT_LINES
            ? [...out.slice(0, OUTPUT_LINES), `… (${out.length - OUTPUT_LINES} more lines)`].join('\n')
            : out.join('\n');
        if (typeof d.diff === 'string' && d.diff) b.diff = d.diff;
        break;
      }
      case 'compaction':
        blocks.push({
          kind: 'note',
          text: `history compacted: ${d.tokens_before} -> ${d.tokens_after} tokens`,
        });
        break;
      case 'session_fork':
        blocks.push({ kind: 'note', text: `forked from ${str(d.from)} at event ${d.at}` });
        break;
      case 'rewind':
        blocks.push({
          kind: 'note',
          text: `rewound to the start of turn ${d.turn}${d.fork ? `; goes on in ${str(d.fork)}` : ''}`,
        });
        break;
      case 'session_end':
        blocks.push({
          kind: 'note',
          text: `run ended ${str(d.code)}${d.reason ? `: ${str(d.reason)}` : ''}`,
        });
        break;
      default:
        break;
    }
  }
  return blocks;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
}

/** A code fence longer than any run of backticks in the text, so the text cannot close it. */
function fence(text: string, lang = ''): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((r) => r.length));
  const f = '`'.repeat(longest + 1);
  return `${f}${lang}\n${text}\n${f}`;
}

/**
 * Model or person text for Markdown: as written, except that every `<` becomes `&lt;`, since Markdown
 * renderers pass raw HTML through to the page. Code in the text is no exception: where a fence or a code
 * span of the model's ends is the renderer's call (an unmatched backtick run, a list item that closes its
 * fence), and guessing wrong would let markup through. keel's own fences (diffs, outputs) stay as written.
 */
function mdText(text: string): string {
  return inert(text).replace(/</g, '&lt;');
}

function markdown(row: SessionRow, blocks: Block[]): string {
  const out = [
    `# keel session ${row.id}`,
    '',
    `- mode: ${row.mode} · model: ${mdText(inertLine(`${row.provider}/${row.model}`))}`,
    `- workspace: ${mdText(inertLine(row.cwd))}`,
    `- started: ${row.created_at}${row.cost_usd !== null && row.cost_usd !== undefined ? ` · cost $${row.cost_usd.toFixed(4)}` : ''}`,
    '',
  ];
  for (const b of blocks) {
    switch (b.kind) {
      case 'turn':
        out.push(
          `## Turn ${b.n}`,
          '',
          ...mdText(b.text)
            .split('\n')
            .map((l) => `> ${l}`),
          '',
        );
        break;
      case 'steer':
        out.push(
          ...mdText(b.text)
            .split('\n')
            .map((l) => `> (steering) ${l}`),
          '',
        );
        break;
      case 'answer':
        out.push(mdText(b.text), '');
        break;
      case 'tool':
        out.push(
          `**${mdText(inertLine(b.tool))}** \`${inertLine(clip(b.args, 200)).replace(/`/g, "'")}\` — ${b.decision ? `${mdText(inertLine(b.decision))}, ` : ''}${b.outcome ?? 'no result'}`,
          '',
        );
        if (b.diff) out.push(fence(inert(b.diff), 'diff'), '');
        else if (b.output)
          out.push('<details><summary>output</summary>', '', fence(inert(b.output)), '', '</details>', '');
        break;
      case 'note':
        out.push(`_${mdText(inertLine(b.text).replace(/[_*`]/g, '\\$&'))}_`, '');
        break;
    }
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** Text made inert for a terminal, then escaped for HTML (text and attribute values alike). */
function esc(text: string): string {
  return inert(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

function diffHtml(diff: string): string {
  return inert(diff)
    .split('\n')
    .map((l) => {
      const cls =
        l.startsWith('+') && !l.startsWith('+++')
          ? 'add'
          : l.startsWith('-') && !l.startsWith('---')
            ? 'del'
            : l.startsWith('@@')
              ? 'hunk'
              : '';
      return `<span${cls ? ` class="${cls}"` : ''}>${esc(l)}</span>`;
    })
    .join('\n');
}

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b;background:#fff}
h1{font-size:1.3rem}h2{font-size:1.05rem;margin-top:2rem;border-top:1px solid #ccc;padding-top:.8rem}
.meta{color:#555}.user{background:#eef4ff;border-left:4px solid #3a6fd8;padding:.5rem .8rem;white-space:pre-wrap}
.steer{color:#6b3fa0;white-space:pre-wrap}.answer{white-space:pre-wrap}
.tool{border:1px solid #ddd;border-radius:4px;padding:.4rem .7rem;margin:.6rem 0}
.tool code{font-size:.85rem}pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;font-size:.85rem}
.add{color:#116329;background:#e6ffec}.del{color:#82071e;background:#ffebe9}.hunk{color:#555}
.note{color:#666;font-style:italic}.ok{color:#116329}.error{color:#82071e}`;

function html(row: SessionRow, blocks: Block[]): string {
  const body: string[] = [
    `<h1>keel session ${esc(row.id)}</h1>`,
    `<p class="meta">mode ${esc(row.mode)} · model ${esc(`${row.provider}/${row.model}`)} · workspace ${esc(row.cwd)} · started ${esc(row.created_at)}</p>`,
  ];
  for (const b of blocks) {
    switch (b.kind) {
      case 'turn':
        body.push(`<h2>Turn ${b.n}</h2>`, `<div class="user">${esc(b.text)}</div>`);
        break;
      case 'steer':
        body.push(`<p class="steer">steering: ${esc(b.text)}</p>`);
        break;
      case 'answer':
        body.push(`<div class="answer">${esc(b.text)}</div>`);
        break;
      case 'tool': {
        const outcome = b.outcome ? `<span class="${b.outcome}">${b.outcome}</span>` : 'no result';
        body.push(
          `<div class="tool"><strong>${esc(b.tool)}</strong> <code>${esc(clip(b.args, 200))}</code> — ${b.decision ? `${esc(b.decision)}, ` : ''}${outcome}`,
        );
        if (b.diff) body.push(`<pre class="diff">${diffHtml(b.diff)}</pre>`);
        else if (b.output)
          body.push(`<details><summary>output</summary><pre>${esc(b.output)}</pre></details>`);
        body.push('</div>');
        break;
      }
      case 'note':
        body.push(`<p class="note">${esc(b.text)}</p>`);
        break;
    }
  }
  // nothing loads and nothing runs: the page's own style is its only resource
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>keel session ${esc(row.id)}</title>
<style>${STYLE}</style></head>
<body>
${body.join('\n')}
</body></html>
`;
}

function clip(text: string, n: number): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

/** The transcript of a stored session (id or prefix), or why there is none. */
export async function exportSession(
  id: string,
  format: ExportFormat,
): Promise<{ id: string; text: string } | { error: string }> {
  const [{ withSession }, { distinctCallIds }] = await Promise.all([
    import('../agent/stored-sessions.js'),
    import('../agent/call-ids.js'),
  ]);
  const found = withSession(id, (log, row) => ({ row, events: distinctCallIds(log.events(row.id)) }));
  if (typeof found === 'string') return { error: found };
  return { id: found.row.id, text: renderExport(found.row, found.events, format) };
}
