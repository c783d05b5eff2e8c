/**
 * The code graph's benchmark: a generated repository of ~2,000 files (~50k lines of TypeScript,
 * Python, Go, Rust and Java), indexed by the real binary (`keel graph index`, worker thread and all):
 * cold, again with nothing changed, and after a one-file change; then query and repo-map latency.
 * Goals, not assertions (issue 11: <= 10 s cold, <= 1 s after a one-file change). Run after `npm run build`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runKeel } from './spawn-timed.mjs';

const FILES = Number(process.env.GRAPH_BENCH_FILES ?? 2000);
const scratch = mkdtempSync(join(tmpdir(), 'keel-graph-bench-'));
const repo = join(scratch, 'repo');
const home = join(scratch, 'home');
mkdirSync(home);

const makers = {
  ts: (i) =>
    Array.from(
      { length: 4 },
      (_, k) =>
        `export function fn${i}_${k}(a: number): number {\n  const b = fn${(i + 7) % FILES}_${k}(a - 1);\n  return util${i % 50}(b) + ${k};\n}\n`,
    ).join('\n') +
    `\nexport class Model${i} {\n  run(x: string): string {\n    return format${i % 20}(x);\n  }\n}\n`,
  py: (i) =>
    `import os\nfrom pkg.util import helper\n\nclass Service${i}:\n    def handle(self, req):\n        return helper(req)\n\n` +
    Array.from(
      { length: 4 },
      (_, k) => `def task${i}_${k}(x):\n    y = task${(i + 3) % FILES}_${k}(x)\n    return helper(y)\n`,
    ).join('\n'),
  go: (i) =>
    `package p${i}\n\nimport "fmt"\n\ntype Server${i} struct {\n  n int\n}\n\nfunc (s *Server${i}) Start() error {\n  fmt.Println(s.n)\n  return nil\n}\n\n` +
    Array.from(
      { length: 3 },
      (_, k) => `func Handle${i}_${k}(n int) int {\n  return Helper${i % 30}(n) + ${k}\n}\n`,
    ).join('\n'),
  rs: (i) =>
    `use crate::util::helper;\n\npub struct Item${i} { v: i32 }\n\nimpl Item${i} {\n    pub fn new(v: i32) -> Self {\n        helper(v);\n        Item${i} { v }\n    }\n}\n\n` +
    Array.from(
      { length: 3 },
      (_, k) => `pub fn compute${i}_${k}(v: i32) -> i32 {\n    helper(v) + ${k}\n}\n`,
    ).join('\n'),
  java: (i) =>
    `package app;\n\nimport java.util.List;\n\npublic class Job${i} {\n` +
    Array.from(
      { length: 4 },
      (_, k) => `  public int step${k}(List<String> xs) {\n    return Helper.count(xs) + ${k};\n  }\n`,
    ).join('') +
    '}\n',
};
const exts = ['ts', 'ts', 'ts', 'py', 'go', 'rs', 'java'];
let lines = 0;
for (let i = 0; i < FILES; i++) {
  const ext = exts[i % exts.length];
  const path = join(repo, `src/m${i % 40}/file${i}.${ext}`);
  const text = makers[ext](i);
  lines += text.split('\n').length;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}
const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: 'b',
  GIT_AUTHOR_EMAIL: 'b@x',
  GIT_COMMITTER_NAME: 'b',
  GIT_COMMITTER_EMAIL: 'b@x',
};
execFileSync('git', ['init', '-q', repo]);
execFileSync('git', ['-C', repo, 'add', '-A'], { env: gitEnv });
execFileSync('git', ['-C', repo, 'commit', '-q', '-m', 'bench'], { env: gitEnv });

/** One run of the binary: wall time from spawn to exit, and the summary it printed. */
async function timed(args) {
  const run = await runKeel(args, { cwd: repo, home });
  if (run.code !== 0) throw new Error(`keel ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return { ms: Math.round(run.ms), doc: args.includes('--json') ? JSON.parse(run.stdout) : undefined };
}

const cold = await timed(['graph', 'index', '--json']);
const unchanged = await timed(['graph', 'index', '--json']);
writeFileSync(join(repo, 'src/m1/file1.ts'), `${makers.ts(1)}\nexport function added(): void {}\n`);
const oneChange = await timed(['graph', 'index', '--json']);
const query = await timed(['graph', 'query', 'fn14_1', '--refs', '--json']);
const map = await timed(['graph', 'map', 'fix fn14_1 in src/m14/file14.ts', '--json']);

const row = (what, r, goal = '') => `| ${what} | ${r.ms} | ${r.doc?.ms ?? ''} | ${goal} |`;
console.log(
  `code graph: ${FILES} files, ${lines} lines, ${cold.doc.symbols} symbols; ${cpus().length} cores, load ${loadavg()[0].toFixed(1)}`,
);
console.log('| step | wall ms (process) | keel ms (inside) | goal |');
console.log('|---|---|---|---|');
console.log(row('index, cold', cold, '<= 10,000'));
console.log(row('index, nothing changed', unchanged));
console.log(row('index, one file changed', oneChange, '<= 1,000'));
console.log(row('query NAME --refs (index check included)', query));
console.log(row(`map (${map.doc.tokens} tokens, ${map.doc.files.length} files)`, map));
console.log(
  `parsed: cold ${cold.doc.parsed}, unchanged ${unchanged.doc.parsed}, one change ${oneChange.doc.parsed}`,
);
rmSync(scratch, { recursive: true, force: true });
