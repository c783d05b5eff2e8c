/** keel's own call ids: given when an answer is recorded, kept apart from the wire's, and told apart in old logs. */
import { describe, expect, it } from 'vitest';
import { distinctCallIds, numberCalls } from '../../src/agent/call-ids.js';
import type { SessionEvent } from '../../src/agent/events.js';
import { replay } from '../../src/agent/history.js';
import type { StoredEvent } from '../../src/store/event-log.js';

const call = (id: string, name = 'read_file') => ({ id, name, arguments: '{"path":"a"}' });

describe('numberCalls', () => {
  it('counts on from the calls already made; a provider id no other call of the answer shares goes back on the wire', () => {
    expect(numberCalls([call('call_0'), call('call_1')], 4, true)).toEqual([
      { ...call('c5'), wire_id: 'call_0' },
      { ...call('c6'), wire_id: 'call_1' },
    ]);
  });

  it('an id shared inside one answer, an empty one, or one keel made up for a text-written call is not sent back', () => {
    expect(numberCalls([call('x'), call('x'), call('')], 0, true)).toEqual([
      call('c1'),
      call('c2'),
      call('c3'),
    ]);
    expect(numberCalls([call('recovered_0')], 2, false)).toEqual([call('c3')]);
  });
});

describe('the history sends the wire ids, and the counter survives a replay', () => {
  it('each result goes back under its call’s wire id, and the next call is numbered after the log’s', () => {
    const events: SessionEvent[] = [
      { type: 'user_message', text: 'go' },
      {
        type: 'assistant_message',
        round: 1,
        model: 'm',
        text: '',
        tool_calls: [
          { ...call('c1'), wire_id: 'call_0' },
          { ...call('c2'), wire_id: 'call_1' },
        ],
        recovered: 0,
        usage: { input: 1, output: 1, reported: true },
        cost_usd: null,
      },
      {
        type: 'tool_result',
        call_id: 'c2',
        tool: 'read_file',
        output: 'two',
        is_error: false,
        files_changed: [],
        diff_lines: 0,
        duration_ms: 1,
      },
    ];
    const state = replay(events.map((event, i) => ({ seq: i + 1, event })));
    expect(state.calls).toBe(2);
    expect(state.messages.at(-2)).toMatchObject({
      role: 'assistant',
      toolCalls: [{ id: 'call_0' }, { id: 'call_1' }],
    });
    expect(state.messages.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'call_1', content: 'two' });
    expect([...state.open.keys()]).toEqual(['c1']);
  });
});

describe('distinctCallIds (logs written before keel had its own ids)', () => {
  const stored = (seq: number, type: string, data: Record<string, unknown>): StoredEvent => ({
    session_id: 's',
    seq,
    ts: '',
    type,
    data,
  });

  it('a later answer reusing an id is renamed ID@SEQ, with every event about its call until the next answer', () => {
    const log = [
      stored(1, 'assistant_message', { tool_calls: [call('call_0', 'list_dir')] }),
      stored(2, 'tool_result', { call_id: 'call_0', tool: 'list_dir' }),
      stored(3, 'assistant_message', { tool_calls: [call('call_0', 'edit_file')], invalid_calls: [] }),
      stored(4, 'gate_decision', { call_id: 'call_0', tool: 'edit_file' }),
      stored(5, 'tool_result', { call_id: 'call_0', tool: 'edit_file' }),
      stored(6, 'assistant_message', { tool_calls: [call('call_1')] }),
    ];
    const read = distinctCallIds(log);
    expect(
      read.map((e) => (e.data.tool_calls as Array<{ id: string }> | undefined)?.[0]?.id ?? e.data.call_id),
    ).toEqual(['call_0', 'call_0', 'call_0@3', 'call_0@3', 'call_0@3', 'call_1']);
    // nothing to rename: the very same events
    expect(distinctCallIds([log[0] as StoredEvent, log[1] as StoredEvent, log[5] as StoredEvent])).toEqual([
      log[0],
      log[1],
      log[5],
    ]);
  });
});
