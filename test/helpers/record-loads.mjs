// `node --import ./record-loads.mjs`: append the URL of every ES module the process loads to the file
// KEEL_TEST_LOADS names, so a test can see what a verb loaded (src/ files map to chunks via dist/bundle/meta.json)
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (process.env.KEEL_TEST_LOADS) appendFileSync(process.env.KEEL_TEST_LOADS, url + '\\n');
  return next(url, context);
}`)}`,
);
