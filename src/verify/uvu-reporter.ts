/**
 * Per-test results for uvu, which has no reporter option and prints a passing test as a bare dot. A
 * preload (given through NODE_OPTIONS as a data: URL, like node's reporter) teaches uvu's own module,
 * as node loads it, to write one JSON line per finished test to `KEEL_UVU_REPORT`. The patch is three
 * exact lines of uvu 0.5; when they are not there the module is left alone, no report is written, and
 * the run is judged by its exit code with a note saying so.
 */

// Plain JavaScript, run by node inside the sandbox: it must not depend on anything keel ships
const PATCH = `
function keelPatchUvu(source) {
  const edits = [
    ['let name = group.shift();', 'let name = group.shift(); globalThis.__keelUvuGroup = name;'],
    ['write(PASS);', 'globalThis.__keelUvu && globalThis.__keelUvu(name, test.name); write(PASS);'],
    ['errors += format(test.name, err, name);',
      'globalThis.__keelUvu && globalThis.__keelUvu(name, test.name, err); errors += format(test.name, err, name);'],
    ['globalThis.UVU_QUEUE.push([suite.name]);',
      'globalThis.UVU_QUEUE.push([suite.name]); (globalThis.__keelUvuFiles ||= {})[suite.name] = suite.file;'],
  ];
  const isRunner = source.includes('async function runner(');
  const needed = isRunner ? edits.slice(0, 3) : edits.slice(3);
  if (!needed.every(([from]) => source.includes(from))) return undefined;
  return needed.reduce((text, [from, to]) => text.replace(from, to), source);
}
const KEEL_UVU_FILE = /[\\\\/]uvu[\\\\/](dist|run)[\\\\/]index\\.m?js$/;
`;

const HOOKS = `${PATCH}
export async function load(url, context, nextLoad) {
  const result = await nextLoad(url, context);
  if (!KEEL_UVU_FILE.test(url) || result.source == null) return result;
  const patched = keelPatchUvu(String(result.source));
  return patched === undefined ? result : { ...result, source: patched };
}
`;

const PRELOAD = `${PATCH}
import { appendFileSync, readFileSync } from 'node:fs';
import Module, { register } from 'node:module';

const report = process.env.KEEL_UVU_REPORT;
if (report) {
  globalThis.__keelUvu = (suite, name, error) => {
    const group = globalThis.__keelUvuGroup;
    const files = globalThis.__keelUvuFiles || {};
    const file = group == null ? undefined : files[group] || group;
    const message = error === undefined ? undefined : String((error && error.message) || error);
    appendFileSync(report, JSON.stringify({ keel: 1, file, suite, name, status: error === undefined ? 'pass' : 'fail', message }) + '\\n');
  };
  // ES modules (import 'uvu') are patched as they load; CommonJS (require('uvu')) here
  register('data:text/javascript;base64,${Buffer.from(HOOKS).toString('base64')}');
  const compileJs = Module._extensions['.js'];
  Module._extensions['.js'] = function (module, filename) {
    if (KEEL_UVU_FILE.test(filename)) {
      const patched = keelPatchUvu(readFileSync(filename, 'utf8'));
      if (patched !== undefined) return module._compile(patched, filename);
    }
    return compileJs(module, filename);
  };
}
`;

/** The preload as a data: URL for `--import`; base64 keeps it free of spaces and quotes. */
export function uvuPreloadUrl(): string {
  return `data:text/javascript;base64,${Buffer.from(PRELOAD).toString('base64')}`;
}
