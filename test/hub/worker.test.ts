/** The worker's request envelope and its mode narrowing (src/hub/worker.ts). */
import { describe, expect, it } from 'vitest';
import { narrowMode, parseRequest, replyKey } from '../../src/hub/worker.js';

describe('hub worker requests', () => {
  it('reads plain text as ask and only the exact envelope as a mode', () => {
    expect(parseRequest('what is this?')).toEqual({ text: 'what is this?', asked: 'ask' });
    expect(parseRequest('{"text":"fix it","mode":"edit"}')).toEqual({ text: 'fix it', asked: 'edit' });
    expect(parseRequest('{"text":"look"}')).toEqual({ text: 'look', asked: 'ask' });
    // anything else is text: an unknown key, a mode spelled otherwise, a broken or non-object JSON body
    for (const body of [
      '{"text":"x","mode":"auto","max_mode":"auto"}',
      '{"text":"x","mode":"EDIT"}',
      '{"text":"x","mode":"edit"',
      '["edit"]',
      'mode: edit',
    ])
      expect(parseRequest(body)).toEqual({ text: body, asked: 'ask' });
  });

  it('narrows a mode to the maximum and never widens it', () => {
    expect(narrowMode('edit', 'plan')).toBe('plan');
    expect(narrowMode('auto', 'plan')).toBe('plan');
    expect(narrowMode('auto', 'edit')).toBe('edit');
    expect(narrowMode('ask', 'edit')).toBe('ask');
    expect(narrowMode('plan', 'ask')).toBe('plan');
    expect(replyKey('m_1')).toBe('keel-worker:m_1');
  });
});
