import { describe, expect, it } from 'vitest';
import { recoverToolCalls, scanJson } from '../../src/model/text-tool-calls.js';

const known = ['read_file', 'edit_file', 'shell'];

describe('recoverToolCalls', () => {
  it('recovers a bare JSON call and keeps the prose', () => {
    const r = recoverToolCalls(
      'I will read it.\n{"name": "read_file", "arguments": {"path": "a.ts"}}',
      known,
    );
    expect(r.calls).toEqual([{ id: 'recovered_0', name: 'read_file', arguments: '{"path":"a.ts"}' }]);
    expect(r.remainingText).toBe('I will read it.');
    expect(r.malformed).toEqual([]);
  });

  it('accepts "parameters" and the OpenAI function wrapper', () => {
    const r = recoverToolCalls(
      '{"name": "shell", "parameters": {"command": "ls"}} {"type": "function", "function": {"name": "read_file", "arguments": "{\\"path\\":\\"b\\"}"}}',
      known,
    );
    expect(r.calls.map((c) => [c.name, c.arguments])).toEqual([
      ['shell', '{"command":"ls"}'],
      ['read_file', '{"path":"b"}'],
    ]);
  });

  it('recovers fenced blocks, with or without a language', () => {
    const text =
      'First:\n```json\n{"name": "read_file", "arguments": {"path": "x"}}\n```\nThen:\n```\n{"name": "shell", "arguments": {"command": "ls"}}\n```\n';
    const r = recoverToolCalls(text, known);
    expect(r.calls.map((c) => c.name)).toEqual(['read_file', 'shell']);
    expect(r.calls.map((c) => c.id)).toEqual(['recovered_0', 'recovered_1']);
    expect(r.remainingText).toBe('First:\n\nThen:');
  });

  it('recovers several <tool_call> tags in order', () => {
    const text =
      '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>\n<tool_call>{"name": "edit_file", "arguments": {"path": "a", "old_string": "x", "new_string": "y"}}</tool_call>';
    const r = recoverToolCalls(text, known);
    expect(r.calls.map((c) => c.name)).toEqual(['read_file', 'edit_file']);
    expect(JSON.parse(r.calls[1]?.arguments ?? '')).toEqual({ path: 'a', old_string: 'x', new_string: 'y' });
    expect(r.remainingText).toBe('');
  });

  it('leaves calls to unknown tools as text', () => {
    const text =
      'Here: {"name": "delete_everything", "arguments": {}} and <tool_call>{"name": "nope", "arguments": {}}</tool_call>';
    const r = recoverToolCalls(text, known);
    expect(r.calls).toEqual([]);
    expect(r.malformed).toEqual([]);
    expect(r.remainingText).toBe(text);
  });

  it('respects braces and quotes inside strings', () => {
    const args = { path: 'a.ts', old_string: 'if (x) { return "}"; }', new_string: '\\"{' };
    const r = recoverToolCalls(`ok {"name": "edit_file", "arguments": ${JSON.stringify(args)}} done`, known);
    expect(r.calls).toHaveLength(1);
    expect(JSON.parse(r.calls[0]?.arguments ?? '')).toEqual(args);
    expect(r.remainingText).toBe('ok  done');
  });

  it('ignores a call shape nested inside other JSON and plain code braces', () => {
    const text =
      'config: {"example": {"name": "shell", "arguments": {"command": "ls"}}}\nfunction f() { return 1; }';
    expect(recoverToolCalls(text, known).calls).toEqual([]);
  });

  it('reports malformed JSON in tags for a known tool, with its raw argument text', () => {
    const text =
      'Let me edit.\n<tool_call>{"name": "edit_file", "arguments": {"path": "a", "old_string": "x}</tool_call>';
    const r = recoverToolCalls(text, known);
    expect(r.calls).toEqual([]);
    expect(r.malformed).toHaveLength(1);
    expect(r.malformed[0]?.name).toBe('edit_file');
    expect(r.malformed[0]?.raw).toBe('{"path": "a", "old_string": "x');
    expect(r.malformed[0]?.error).toBeTruthy();
    expect(r.remainingText).toBe('Let me edit.');
  });

  it('accepts an unclosed final tag', () => {
    const r = recoverToolCalls('<tool_call>{"name": "shell", "arguments": {"command": "pwd"}}', known);
    expect(r.calls.map((c) => c.name)).toEqual(['shell']);
  });

  it('returns text without calls unchanged', () => {
    const text = 'Nothing to do here {really}.';
    expect(recoverToolCalls(text, known)).toEqual({ calls: [], malformed: [], remainingText: text });
  });
});

describe('scanJson', () => {
  it('finds the end of a balanced object and refuses an unbalanced one', () => {
    expect(scanJson('x {"a": "}"} y', 2)).toBe(12);
    expect(scanJson('{"a": {', 0)).toBe(-1);
    expect(scanJson('abc', 0)).toBe(-1);
  });
});
