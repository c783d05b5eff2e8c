/** The `@` picker's listing outside git, and `@"a name with a space"` as the picker writes it and a message attaches it. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatCompletions } from '../../src/chat/file-picker.js';
import { attachMentions } from '../../src/chat/mentions.js';
import { tempDir } from '../helpers/tmp.js';

const signal = new AbortController().signal;

describe('the @ file picker', () => {
  it('outside git walks the folder, skipping dependency folders, and quotes a name with a space', async () => {
    const root = tempDir('keel-picker-');
    mkdirSync(join(root, 'src'));
    mkdirSync(join(root, 'node_modules', 'dep'), { recursive: true });
    writeFileSync(join(root, 'src', 'main.ts'), 'main\n');
    writeFileSync(join(root, 'node_modules', 'dep', 'main.js'), 'dep\n');
    writeFileSync(join(root, 'my notes.md'), 'NOTES BODY\n');
    const picker = new ChatCompletions([], root);
    const main = await picker.getSuggestions(['see @main'], 0, 9, { signal });
    expect(main?.items.map((i) => i.value)).toEqual(['@src/main.ts']);
    const notes = await picker.getSuggestions(['@notes'], 0, 6, { signal });
    expect(notes?.items.map((i) => i.value)).toEqual(['@"my notes.md"']);
    const applied = picker.applyCompletion(
      ['@notes'],
      0,
      6,
      notes?.items[0] ?? { value: '', label: '' },
      '@notes',
    );
    expect(applied.lines[0]).toBe('@"my notes.md" ');
    const attached = attachMentions(`read ${applied.lines[0]}please`, root);
    expect(attached.files).toEqual(['my notes.md']);
    expect(attached.text).toContain('NOTES BODY');
  });
});
