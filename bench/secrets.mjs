/**
 * How good and how fast `keel check`'s scanner is (build first): precision and recall per category on the
 * labelled corpus in test/fixtures/secrets/, then scan throughput over this project's node_modules text.
 * KEEL_SCANNER=/path/to/secret-scan.js measures another build (an older one, to compare); BENCH_MB caps
 * how much node_modules text is read (default 64).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = new URL('..', import.meta.url).pathname;
const scanner = resolve(process.env.KEEL_SCANNER ?? join(root, 'dist/policy/secret-scan.js'));
const { scanText } = await import(pathToFileURL(scanner).href);
const corpusDir = join(root, 'test/fixtures/secrets');

// -- precision and recall ---------------------------------------------------------------------------

const manifest = JSON.parse(readFileSync(join(corpusDir, 'manifest.json'), 'utf8'));
// corpus files are stored defanged as <path>.txt (see test/fixtures/secrets/README.md)
const categoryOf = new Map(
  Object.entries(manifest.categories).flatMap(([cat, ids]) => ids.map((id) => [id, cat])),
);
const rows = new Map();
const row = (cat) =>
  rows.get(cat) ?? rows.set(cat, { positives: 0, tp: 0, fp: 0, fn: 0, negatives: 0 }).get(cat);
const byFile = new Map();
for (const c of manifest.cases) byFile.set(c.file, [...(byFile.get(c.file) ?? []), c]);
const misses = [];
for (const [file, cases] of byFile) {
  const text = readFileSync(join(corpusDir, 'corpus', `${file}.txt`), 'utf8').replaceAll(manifest.defang, '');
  const findings = scanText(file, text);
  const expected = new Map(cases.map((c) => [c.line, c]));
  for (const c of cases) {
    if (c.rule === null) {
      row(c.category).negatives++;
      continue;
    }
    const r = row(categoryOf.get(c.rule) ?? 'unknown');
    r.positives++;
    if (findings.some((f) => f.line === c.line && f.rule === c.rule)) r.tp++;
    else {
      r.fn++;
      misses.push(`missed   ${file}:${c.line} ${c.rule}`);
    }
  }
  for (const f of findings) {
    const c = expected.get(f.line);
    if (c && c.rule === f.rule) continue;
    row(categoryOf.get(f.rule) ?? 'unknown').fp++;
    misses.push(`extra    ${file}:${f.line} ${f.rule}${c ? ` (labelled ${c.rule ?? 'none'})` : ''}`);
  }
}

const ratio = (n, d) => (d === 0 ? '-' : (n / d).toFixed(3));
const table = [...rows].sort(([a], [b]) => a.localeCompare(b));
const total = table.reduce(
  (t, [, r]) => {
    for (const k of Object.keys(t)) t[k] += r[k];
    return t;
  },
  { positives: 0, tp: 0, fp: 0, fn: 0, negatives: 0 },
);
console.log(`scanner: ${relative(root, scanner) || scanner}\n`);
console.log(
  '| category | true positives labelled | near-misses labelled | found | missed | false alarms | precision | recall |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const [cat, r] of [...table, ['**overall**', total]]) {
  console.log(
    `| ${cat} | ${r.positives} | ${r.negatives} | ${r.tp} | ${r.fn} | ${r.fp} | ${ratio(r.tp, r.tp + r.fp)} | ${ratio(r.tp, r.positives)} |`,
  );
}
if (misses.length) console.log(`\n${misses.join('\n')}`);

// -- throughput -------------------------------------------------------------------------------------

const TEXT = /\.(?:[cm]?js|[cm]?ts|jsx|tsx|json|md|ya?ml|toml|txt|map|d\.ts|css|html)$/;
const capBytes = Number(process.env.BENCH_MB ?? 64) * 1024 * 1024;
const files = [];
let bytes = 0;
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
    a.name.localeCompare(b.name),
  )) {
    if (bytes >= capBytes) return;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(full);
    else if (entry.isFile() && TEXT.test(entry.name) && statSync(full).size <= 2 * 1024 * 1024) {
      const text = readFileSync(full, 'utf8');
      files.push([relative(root, full), text]);
      bytes += Buffer.byteLength(text);
    }
  }
};
walk(join(root, 'node_modules'));

const RUNS = Number(process.env.RUNS ?? 5);
// rounds alternate between scanners so background load on a shared machine lands on both alike
const scanners = [[relative(root, scanner) || scanner, scanText]];
if (process.env.COMPARE) {
  const other = resolve(process.env.COMPARE);
  scanners.push([other, (await import(pathToFileURL(other).href)).scanText]);
}
const times = scanners.map(() => []);
const found = scanners.map(() => []);
for (let run = 0; run < RUNS; run++) {
  scanners.forEach(([, scan], i) => {
    const start = process.hrtime.bigint();
    const hits = [];
    for (const [path, text] of files)
      for (const f of scan(path, text)) hits.push(`${path}:${f.line} ${f.rule}`);
    times[i].push(Number(process.hrtime.bigint() - start) / 1e9);
    found[i] = hits;
  });
}
const mb = bytes / 1024 / 1024;
console.log(
  `\nthroughput over ${files.length} node_modules text files, ${mb.toFixed(1)} MB, median of ${RUNS}:`,
);
scanners.forEach(([name], i) => {
  const sorted = [...times[i]].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  console.log(
    `  ${name}: ${median.toFixed(2)} s = ${(mb / median).toFixed(1)} MB/s, ${found[i].length} findings`,
  );
});
if (process.env.SHOW) console.log(found[0].join('\n'));
