import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportLines, ImportError, parseImport } from '../../src/memory/import-export.js';
import { INJECT_HEADER, injectionFor, MODEL_MARK } from '../../src/memory/inject.js';
import { Memory } from '../../src/memory/memory.js';
import { observationsOf } from '../../src/memory/observe.js';
import { estimateTokens, loadTokenizer } from '../../src/model/tokens.js';
import { openDb } from '../../src/store/db.js';
import { tempDir } from '../helpers/tmp.js';

async function seeded(now = () => new Date('2026-03-01T00:00:00Z')) {
  const mem = new Memory(openDb(':memory:'), 'git:p', { archiveDir: join(tempDir(), 'a'), now });
  await mem.add({ kind: 'note', text: 'The parser is generated from grammar.peg by peggy', author: 'user' });
  await mem.add({ kind: 'note', text: 'Parser errors carry a line and a column', author: 'model' });
  await mem.add({ kind: 'decision', text: 'We keep the parser free of regexes', author: 'user' });
  await mem.add({ kind: 'note', text: 'Unrelated: the logo is blue', author: 'user' });
  return mem;
}

describe('injection', () => {
  it('fits the budget, marks the model, and is identical for identical inputs', async () => {
    await loadTokenizer();
    const a = await injectionFor(await seeded(), 'how does the parser report errors?', 600);
    const b = await injectionFor(await seeded(), 'how does the parser report errors?', 600);
    // ids are fresh per store; the text sent and its cost are the same
    expect(a?.text).toBe(b?.text);
    expect(a?.tokens).toBe(b?.tokens);
    expect(a?.text.startsWith(INJECT_HEADER)).toBe(true);
    expect(a?.text).toContain(`Parser errors carry a line and a column ${MODEL_MARK}`);
    expect(a?.text).not.toContain('logo');
    expect(a?.ids).toHaveLength(3);
    expect(estimateTokens(a?.text ?? '')).toBeLessThanOrEqual(a?.tokens ?? 0);

    const small = await injectionFor(await seeded(), 'how does the parser report errors?', 50);
    expect(small?.tokens).toBeLessThanOrEqual(50);
    expect(small?.ids.length).toBeGreaterThan(0);
    expect(small?.ids.length).toBeLessThan(3);
    expect(await injectionFor(await seeded(), 'parser', 0)).toBeUndefined();
    expect(await injectionFor(await seeded(), 'nothing matches xyzzy', 600)).toBeUndefined();
  });
});

describe('observations', () => {
  it('reads files changed, the last test outcome and denials from the events', () => {
    const events = [
      { type: 'tool_result', data: { tool: 'edit_file', is_error: false, files_changed: ['b.ts', 'a.ts'] } },
      { type: 'tool_result', data: { tool: 'write_file', is_error: true, files_changed: ['never.ts'] } },
      {
        type: 'tool_result',
        data: {
          tool: 'run_tests',
          is_error: true,
          files_changed: [],
          outcome: { tests: { passed: 1, failed: 2, skipped: 0 } },
        },
      },
      {
        type: 'tool_result',
        data: {
          tool: 'run_tests',
          is_error: false,
          files_changed: [],
          outcome: { tests: { passed: 3, failed: 0, skipped: 1 } },
        },
      },
      {
        type: 'gate_decision',
        data: { tool: 'shell', decision: 'deny', deny: 'policy', reason: 'no sandbox' },
      },
      {
        type: 'gate_decision',
        data: { tool: 'shell', decision: 'deny', deny: 'policy', reason: 'no sandbox' },
      },
      { type: 'gate_decision', data: { tool: 'read_file', decision: 'allow' } },
    ];
    expect(observationsOf(events, 'fix the parser\nmore detail')).toEqual([
      {
        kind: 'file_changed',
        text: 'Files changed: "a.ts", "b.ts" (task: fix the parser)',
        tags: ['session'],
      },
      {
        kind: 'test_outcome',
        text: 'Tests: 3 passed, 0 failed, 1 skipped (task: fix the parser)',
        tags: ['passing'],
      },
      {
        kind: 'gate_denial',
        text: 'The gate denied a "shell" call (policy); its reason, which repeats the model\'s arguments: "no sandbox"',
        tags: ['gate'],
      },
    ]);
    expect(observationsOf([], 'x')).toEqual([]);
  });
});

describe('import', () => {
  it('round-trips an export and names the first bad line', async () => {
    const mem = await seeded();
    const parsed = parseImport(exportLines(mem.list()), 'f');
    expect(parsed.map((p) => p.text).sort()).toEqual(
      mem
        .list()
        .map((i) => i.text)
        .sort(),
    );
    expect(() =>
      parseImport(
        '\n{"kind":"note","text":"x","author":"user"}\n{"kind":"gossip","text":"x","author":"user"}\n',
        'f.jsonl',
      ),
    ).toThrow(/f\.jsonl line 3 is not a memory item: kind/);
    try {
      parseImport('nope', 'f');
    } catch (err) {
      expect(err).toBeInstanceOf(ImportError);
      expect((err as ImportError).line).toBe(1);
    }
  });
});
