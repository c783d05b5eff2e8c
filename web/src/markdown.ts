/**
 * Model text as Markdown, safely: markdown-it with raw HTML off (a tag in the text stays text), links
 * only to http(s) and mailto, images as links (a loaded image is a beacon), code blocks highlighted by a few
 * highlight.js grammars, and the HTML that comes out passed through DOMPurify with a short allow-list
 * before it touches the page. What cannot be rendered safely is shown as text, never dropped silently.
 */
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';
import MarkdownIt from 'markdown-it';

hljs.registerLanguage('bash', bash);
hljs.registerLanguage('diff', diff);
hljs.registerLanguage('go', go);
hljs.registerLanguage('javascript', javascript);
hljs.registerLanguage('json', json);
hljs.registerLanguage('python', python);
hljs.registerLanguage('rust', rust);
hljs.registerLanguage('typescript', typescript);
hljs.registerAliases(['shell', 'console', 'sh'], { languageName: 'bash' });

export { hljs };

/** Where a link may point: the web and mail, nothing the page would run or open as itself. */
const SAFE_URL = /^(?:https?:|mailto:)/i;

const md = new MarkdownIt({
  html: false,
  linkify: true,
  typographer: false,
  // hljs escapes what it returns; an unknown language gets markdown-it's own escaping
  highlight(code, lang) {
    const language = lang.trim().toLowerCase();
    if (!language || !hljs.getLanguage(language)) return '';
    try {
      return hljs.highlight(code, { language, ignoreIllegals: true }).value;
    } catch {
      return '';
    }
  },
});
// file names are not links: README.md would become http://README.md (.md is a country's domain)
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
md.validateLink = (url: string) => SAFE_URL.test(url.trim());
// an image is never loaded (it would tell a server the page was read): it is a link to where it is
md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx];
  const src = String(token?.attrGet('src') ?? '');
  const label = `image: ${token?.content || src}`;
  return `<a href="${md.utils.escapeHtml(src)}">${md.utils.escapeHtml(label)}</a>`;
};

const ALLOWED_TAGS = [
  'p',
  'br',
  'hr',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'blockquote',
  'ul',
  'ol',
  'li',
  'strong',
  'em',
  's',
  'code',
  'pre',
  'span',
  'a',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
];

let hooked = false;

/** Markdown as a sanitized fragment of the page's own document. */
export function markdown(text: string): DocumentFragment {
  if (!hooked) {
    // every link leaves the page in a new tab, without the page's window or address
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A') {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer nofollow');
      }
    });
    hooked = true;
  }
  return DOMPurify.sanitize(md.render(text).trim(), {
    ALLOWED_TAGS,
    ALLOWED_ATTR: ['href', 'class', 'title', 'start'],
    ALLOWED_URI_REGEXP: SAFE_URL,
    RETURN_DOM_FRAGMENT: true,
  });
}
