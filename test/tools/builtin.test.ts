import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { builtinTools } from '../../src/tools/builtin.js';
import { parseArgs, ToolRegistry, toolSpec } from '../../src/tools/registry.js';

const tokens = (value: unknown) => encode(JSON.stringify(value)).length;

describe('builtinTools', () => {
  it('lists the contract tools in the design table order with their effects', () => {
    expect(builtinTools().map((t) => [t.name, t.effect])).toEqual([
      ['read_file', 'read'],
      ['list_dir', 'read'],
      ['glob', 'read'],
      ['grep', 'read'],
      ['edit_file', 'write'],
      ['write_file', 'write'],
      ['shell', 'exec'],
      ['run_tests', 'exec'],
    ]);
    expect(() => new ToolRegistry(builtinTools())).not.toThrow();
  });

  it('keeps the specs small enough for a small model', () => {
    const specs = builtinTools().map(toolSpec);
    // with a ~300 token system prompt, the read-only session must stay well under 1000 tokens
    expect(tokens(specs.slice(0, 4))).toBeLessThan(400);
    expect(tokens(specs)).toBeLessThan(720);
    for (const spec of specs) expect(spec.description.split(/\s+/).length).toBeLessThanOrEqual(40);
  });

  it('accepts stray keys and numeric strings from sloppy models', () => {
    const [readFile] = builtinTools();
    if (!readFile) throw new Error('no tools');
    expect(parseArgs(readFile, '{"path":"a.ts","offset":"5","note":"x"}')).toEqual({
      ok: true,
      args: { path: 'a.ts', offset: 5 },
    });
  });
});
