/**
 * Where keel's start goes: the real binary's launch, command by command, beside node's own start.
 * Build first (`npm run build`): every row spawns `node bin/keel.js` as a user's shell would.
 *
 *   node bench/startup.mjs                      # this build
 *   KEEL_BASELINE=/other/bin/keel.js node bench/startup.mjs   # and another build (say, before a change), interleaved
 *   node bench/startup.mjs --deps               # also: the import cost of each dependency alone
 *
 * Rows: `node -e ""` (the floor: Node starting and exiting), `keel --version`, `keel --help`,
 * `keel __complete sessions` (what a completion script runs on Tab), and `keel ask "hi"` against the
 * scripted model on 127.0.0.1 answering "OK" (wall, and launch → the first chat request reaching the
 * server), and `keel chat` with "hi" piped in against the same model (one turn, then end of input; wall,
 * and launch → its first chat request). Runs are interleaved round by round (each build, each row), so
 * background load lands on every row alike; one warm-up round is dropped; the medians and p10–p90 are of
 * BENCH_RUNS rounds (default 15). CPU is the process's user + system time (all its threads), steadier than wall time
 * when other work shares the cores. The load average is printed before and after: on a shared machine
 * it is what to read next to the milliseconds. "loaded" is what one run of each row loaded from
 * dist/bundle (files, KB).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const MODEL = 'bench-model';
const SELF = fileURLToPath(import.meta.url);
const RECORDER = fileURLToPath(new URL('../test/helpers/record-loads.mjs', import.meta.url));
const TRIVIAL = { turns: [{ text: 'OK', usage: { prompt_tokens: 650, completion_tokens: 1 } }] };

/** Dependencies keel imports, alone (a shared dependency is charged to each that pulls it in). */
const ALONE = [
  'commander',
  'zod',
  'better-sqlite3',
  'smol-toml',
  'ignore',
  'picomatch',
  'yaml',
  '@mariozechner/pi-tui',
];

if (process.argv[2] === '--child') {
  const t0 = performance.now();
  await import(process.argv[3]);
  process.stdout.write(String(performance.now() - t0));
} else {
  await main();
}

async function main() {
  // loaded here, not at the top: a `--child` measuring an import alone must not have loaded it already
  const { serve } = await import('./serve.mjs');
  const { BIN, keelEnv, runNodeWith } = await import('./spawn-timed.mjs');
  const runNode = (args, { cwd, home, input }) => timedNode(args, { cwd, env: keelEnv(home), input });
  const builds = [['keel', BIN]];
  if (process.env.KEEL_BASELINE) builds.push(['baseline', resolve(process.env.KEEL_BASELINE)]);
  const scratch = mkdtempSync(join(tmpdir(), 'keel-startup-'));
  const cwd = mkdtempSync(join(scratch, 'work-'));
  const homes = Object.fromEntries(builds.map(([name]) => [name, mkdtempSync(join(scratch, `${name}-`))]));
  const rows = new Map();
  const add = (row, build, ms, cpu) => {
    const key = `${row}\u0000${build}`;
    if (!rows.has(key)) rows.set(key, { row, build, ms: [], cpu: [] });
    rows.get(key).ms.push(ms);
    if (cpu !== undefined) rows.get(key).cpu.push(cpu);
  };
  const loadBefore = loadavg();
  for (let round = 0; round <= RUNS; round++) {
    const keep = round > 0;
    const floor = await runNode(['-e', ''], { cwd, home: homes.keel });
    if (keep) add('`node -e ""` (floor)', '', floor.ms, floor.cpu);
    for (const [build, bin] of builds) {
      const home = homes[build];
      for (const [row, args] of [
        ['`keel --version`', ['--version']],
        ['`keel --help`', ['--help']],
      ]) {
        const run = ok(await runNode([bin, ...args], { cwd, home }), `${build} ${row}`);
        if (keep) add(row, build, run.ms, run.cpu);
      }
      const { server, arrivals } = await serve(TRIVIAL, MODEL);
      const ask = ok(
        await runNode(
          [bin, 'ask', '--provider', 'openai', '--base-url', server.url, '--model', MODEL, 'hi'],
          { cwd, home },
        ),
        `${build} keel ask`,
      );
      await server.close();
      if (ask.stdout.trim() !== 'OK')
        throw new Error(`${build}: keel ask printed ${JSON.stringify(ask.stdout)}`);
      const first = arrivals.find((a) => a.method === 'POST' && a.path === '/v1/chat/completions');
      if (!first) throw new Error(`${build}: keel ask sent no chat request`);
      if (keep) {
        add('`keel ask "hi"`, wall', build, ask.ms, ask.cpu);
        add('… launch → first chat request', build, Number(first.at - ask.t0) / 1e6);
      }
      const piped = await serve(TRIVIAL, MODEL);
      const chat = ok(
        await runNode(
          [bin, 'chat', '--provider', 'openai', '--base-url', piped.server.url, '--model', MODEL],
          { cwd, home, input: 'hi\n' },
        ),
        `${build} keel chat`,
      );
      await piped.server.close();
      if (!chat.stdout.includes('OK'))
        throw new Error(`${build}: keel chat printed ${JSON.stringify(chat.stdout)}`);
      const chatFirst = piped.arrivals.find((a) => a.method === 'POST' && a.path === '/v1/chat/completions');
      if (!chatFirst) throw new Error(`${build}: keel chat sent no chat request`);
      if (keep) {
        add('`keel chat`, "hi" piped in, wall', build, chat.ms, chat.cpu);
        add('… launch → its first chat request', build, Number(chatFirst.at - chat.t0) / 1e6);
      }
      // after the ask, so the store has a session to complete
      const complete = ok(await runNode([bin, '__complete', 'sessions'], { cwd, home }), `${build} complete`);
      if (!complete.stdout.trim()) throw new Error(`${build}: __complete sessions listed nothing`);
      if (keep) add('`keel __complete sessions`', build, complete.ms, complete.cpu);
    }
  }
  const loadAfter = loadavg();

  const loaded = {};
  for (const [build, bin] of builds) {
    const { server } = await serve(TRIVIAL, MODEL);
    for (const [row, args, input] of [
      ['`keel --version`', ['--version']],
      ['`keel --help`', ['--help']],
      ['`keel __complete sessions`', ['__complete', 'sessions']],
      [
        '`keel ask "hi"`, wall',
        ['ask', '--provider', 'openai', '--base-url', server.url, '--model', MODEL, 'hi'],
      ],
      [
        '`keel chat`, "hi" piped in, wall',
        ['chat', '--provider', 'openai', '--base-url', server.url, '--model', MODEL],
        'hi\n',
      ],
    ])
      loaded[`${row}\u0000${build}`] = await loads(
        bin,
        args,
        { cwd, env: { ...keelEnv(homes[build]) }, input },
        runNodeWith,
      );
    await server.close();
  }
  rmSync(scratch, { recursive: true, force: true });

  const q = (xs, p) => {
    const s = [...xs].sort((a, b) => a - b);
    const i = (s.length - 1) * p;
    return s[Math.floor(i)] + (s[Math.ceil(i)] - s[Math.floor(i)]) * (i - Math.floor(i));
  };
  const lines = [
    '| what | build | wall, median ms | p10–p90 ms | CPU, median ms | loaded from dist/bundle |',
    '| --- | --- | ---: | ---: | ---: | ---: |',
  ];
  for (const { row, build, ms, cpu } of rows.values()) {
    const l = loaded[`${row}\u0000${build}`];
    lines.push(
      `| ${row} | ${build} | ${q(ms, 0.5).toFixed(0)} | ${q(ms, 0.1).toFixed(0)}–${q(ms, 0.9).toFixed(0)} | ${cpu.length ? q(cpu, 0.5).toFixed(0) : ''} | ${l ? `${l.files} files, ${l.kb} KB` : ''} |`,
    );
  }
  const avg = (l) => l.map((x) => x.toFixed(1)).join(' ');
  lines.push(
    '',
    `${RUNS} rounds; load average before ${avg(loadBefore)}, after ${avg(loadAfter)}; node ${process.version}`,
  );
  for (const [build, bin] of builds) lines.push(`${build}: ${bin}`);
  if (process.argv.includes('--deps')) {
    lines.push('', '| import alone | ms (median of fresh processes) |', '| --- | ---: |');
    for (const spec of ALONE) {
      const runs = Array.from({ length: 7 }, () => {
        const r = spawnSync(process.execPath, [SELF, '--child', spec], { encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`import of ${spec} failed:\n${r.stderr}`);
        return Number(r.stdout);
      });
      lines.push(`| \`${spec}\` | ${q(runs, 0.5).toFixed(1)} |`);
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * Run `node ...args` and time it: `ms` is wall time from just before spawn to 'exit' (process.hrtime, `t0`
 * its start, so a request's arrival stamp can be placed on the same clock); `cpu` is the process's user +
 * system time, which bash's `times` reports for its child to the millisecond (the wrapper's own start, a
 * few ms, is in every row's wall time alike, the floor's too). CPU time is the steadier figure when other
 * work shares the cores.
 */
function timedNode(args, { cwd, env, input }) {
  const script = '"$@"; code=$?; times >&2; exit $code';
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn('bash', ['-c', script, 'bash', process.execPath, ...args], {
      cwd,
      env,
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (input !== undefined) child.stdin.end(input);
    let stdout = '';
    let stderr = '';
    let ms = 0;
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('exit', () => {
      ms = Number(process.hrtime.bigint() - t0) / 1e6;
    });
    child.on('close', (code) => {
      const lines = stderr.trimEnd().split('\n');
      const m = (lines.at(-1) ?? '').match(/^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/);
      const cpu = m
        ? (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000
        : undefined;
      resolve({ code, ms, t0, cpu, stdout, stderr: lines.slice(0, -2).join('\n') });
    });
  });
}

/** Fail loudly: timing a broken run measures nothing. */
function ok(run, what) {
  if (run.code === 0) return run;
  throw new Error(`${what} exited ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
}

/** What one run of `bin args` loaded from its build's dist/bundle: files and kilobytes (async: the model is in this process). */
async function loads(bin, args, { cwd, env, input }, runNodeWith) {
  const bundle = join(dirname(bin), '..', 'dist', 'bundle');
  const log = join(mkdtempSync(join(tmpdir(), 'keel-loads-')), 'loads');
  await runNodeWith([`--import=${RECORDER}`, bin, ...args], {
    cwd,
    env: { ...env, KEEL_TEST_LOADS: log },
    input,
  });
  let urls = [];
  try {
    urls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  } catch {
    // nothing loaded through the module loader
  }
  rmSync(dirname(log), { recursive: true, force: true });
  const files = urls
    .filter((u) => u.startsWith('file:'))
    .map((u) => fileURLToPath(u))
    .filter((f) => f.startsWith(bundle));
  const bytes = files.reduce((sum, f) => sum + statSync(f).size, 0);
  return { files: files.length, kb: Math.round(bytes / 1024) };
}
