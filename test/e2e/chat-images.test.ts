/**
 * `@shot.png` in chat attaches the picture, through the real binary in tmux: OpenAI-compatible
 * `image_url` parts (a server that does not say whether the model reads images), Ollama's `images`
 * (a server that says, per model). The log keeps the image by hash and size; a later turn re-reads the
 * file and sends it while the hash matches, and says so when it changed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { chatBodies, keelHome, lastSessionEvents, model, modelFlags } from './harness.js';
import { Pane } from './pane.js';

const READY = /ctx \d/;
const IDLE = /^(?![\s\S]*working · Ctrl\+C stops)/;
// a real 1×1 PNG, and another
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const PNG2 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==',
  'base64',
);

type Part = { type: string; text?: string; image_url?: { url: string } };
type WireMessage = { role: string; content: string | Part[]; images?: string[] };
/** Wait for a text however the pane wraps it (a long notice folds at the pane's width). */
async function waitWrapped(pane: Pane, text: string): Promise<string> {
  const words = text.split(/\s+/).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return pane.waitFor(new RegExp(words.join('\\s+')));
}
const messagesOf = (body: unknown) => (body as { messages: WireMessage[] }).messages;
const imageUrls = (m: WireMessage | undefined) =>
  Array.isArray(m?.content)
    ? m.content.filter((p) => p.type === 'image_url').map((p) => p.image_url?.url)
    : [];

describe('keel chat: images', () => {
  it('OpenAI-compatible: @shot.png goes as an image_url part; the log keeps its hash, not its bytes; the next turn re-reads it, a changed file is said, a refusal names the image', async () => {
    const server = await model([
      { text: 'a tiny square' },
      { text: 'still the square' },
      { text: 'the picture changed' },
      { error: { status: 400 } },
    ]);
    const repo = gitRepo({ 'README.md': '# r\n' });
    writeFileSync(join(repo, 'shot.png'), PNG);
    writeFileSync(join(repo, 'other.png'), PNG2);
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('what is in @shot.png ?', 'Enter');
    const first = await pane.waitFor('a tiny square');
    expect(first).toContain('attached image shot.png (');
    expect(first).toContain('the server does not say whether the model reads images: sent anyway');
    await pane.waitFor(IDLE);

    const data = `data:image/png;base64,${PNG.toString('base64')}`;
    const [one] = chatBodies(server);
    const user = messagesOf(one).findLast((m) => m.role === 'user');
    expect(imageUrls(user)).toEqual([data]);
    expect((user?.content as Part[] | undefined)?.[0]).toEqual({
      type: 'text',
      text: 'what is in @shot.png ?',
    });

    // the log: path, hash, size; never the bytes
    const logged = lastSessionEvents(home).find((e) => e.type === 'user_message')?.data as {
      images: Array<Record<string, unknown>>;
    };
    const sha256 = (await import('node:crypto')).createHash('sha256').update(PNG).digest('hex');
    expect(logged.images).toEqual([{ path: 'shot.png', mime: 'image/png', sha256, bytes: PNG.length }]);
    expect(JSON.stringify(lastSessionEvents(home))).not.toContain(PNG.toString('base64').slice(0, 40));

    // the next turn is a new run of the session: the image is read again and sent while its hash matches
    pane.type('and now?', 'Enter');
    await pane.waitFor('still the square');
    await pane.waitFor(IDLE);
    expect(imageUrls(messagesOf(chatBodies(server)[1]).find((m) => m.role === 'user'))).toEqual([data]);

    // the file changes: not sent again, and both the person and the model are told
    writeFileSync(join(repo, 'shot.png'), PNG2);
    pane.type('and after the change?', 'Enter');
    const changed = await pane.waitFor('the picture changed');
    expect(changed).toMatch(/@shot\.png is not sent again: the file changed since it was attached/);
    await pane.waitFor(IDLE);
    const third = messagesOf(chatBodies(server)[2]).find((m) => m.role === 'user');
    expect(imageUrls(third)).toEqual([]);
    expect(JSON.stringify(third?.content)).toContain(
      '[image shot.png was attached here but is not sent again: the file changed since it was attached',
    );

    // a server that refuses the image: its error, and the image named as the likely cause
    // a word after the mention: Enter while the file completion is open would complete, not send
    pane.type('and @other.png ?', 'Enter');
    await waitWrapped(pane, 'the request carried an image: test-model may not accept images');
    expect(imageUrls(messagesOf(chatBodies(server)[3]).findLast((m) => m.role === 'user'))).toEqual([
      `data:image/png;base64,${PNG2.toString('base64')}`,
    ]);
    expect(readFileSync(join(repo, 'shot.png'))).toEqual(PNG2);
  });

  it('Ollama: a model whose /api/show capabilities lack vision is refused before any request; one with vision gets the native images array', async () => {
    const server = await model([{ text: 'I see a square', model: 'llava' }], {
      models: ['qwen-text', 'llava'],
      vision: ['llava'],
    });
    const repo = gitRepo({ 'README.md': '# r\n' });
    writeFileSync(join(repo, 'shot.png'), PNG);
    const home = keelHome();
    const pane = Pane.start(
      ['chat', '--provider', 'ollama', '--base-url', server.ollamaUrl, '--model', 'qwen-text'],
      { cwd: repo, home },
    );
    await pane.waitFor(READY);
    pane.type('look at @shot.png ?', 'Enter');
    await waitWrapped(
      pane,
      'not sent: qwen-text does not accept images (Ollama /api/show capabilities: completion, tools); choose a model that does with /model',
    );
    expect(server.requests.filter((r) => r.path === '/api/chat')).toEqual([]);

    pane.type('/model llava', 'Enter');
    // the switch's own answer (the typed command also shows `llava`, so a bare `llava` matched at once)
    await pane.waitFor('model llava from the next turn');
    pane.type('look at @shot.png ?', 'Enter');
    const seen = await pane.waitFor('I see a square');
    expect(seen.replace(/\s+/g, ' ')).toContain(
      'llava reads images (Ollama /api/show capabilities: completion, tools, vision)',
    );
    const [chat] = server.requests.filter((r) => r.path === '/api/chat');
    const user = messagesOf(chat?.body).findLast((m) => m.role === 'user');
    expect(user).toEqual({ role: 'user', content: 'look at @shot.png ?', images: [PNG.toString('base64')] });
  });
});
