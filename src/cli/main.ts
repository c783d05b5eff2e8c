/** The `keel` command line: verbs, flags and help. Each verb's module is loaded only when it runs. */
import { Argument, Command, CommanderError, Option } from 'commander';
import { keelPaths } from '../config/paths.js';
import { EXIT } from '../term/exit-codes.js';
import { reportError, wantsJson } from './errors.js';
import { hubRunsCommand } from './hub-runs-command.js';
import { mcpCommand } from './mcp-command.js';
import { listToolsCommand } from './mcp-list-tools.js';
import {
  addBudgetOptions,
  addModelOptions,
  addSessionOptions,
  collect,
  collectTags,
  parseFloatArg,
  parseIntArg,
} from './options.js';
import { addSessionVerbs } from './session-verbs.js';
import { showHelp } from './usage.js';

/** The whole command tree (exported so `keel completion` and tests can walk it). */
export function buildProgram(version: string, setExit: (code: number) => void, json = false): Command {
  const program = new Command('keel')
    .description('A local-first coding agent for your own models. Read-only unless you say otherwise.')
    .version(version, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    // `keel trust --json` and `keel trust diff --json` each own their flags
    .enablePositionalOptions()
    .exitOverride()
    // with --json a usage error is the one JSON document (main writes it): no commander text beside it
    .configureOutput({
      writeErr: (s) => (json ? undefined : process.stderr.write(s)),
      writeOut: (s) => process.stdout.write(s),
    });

  // bare `keel` and keel ask|plan|edit|run (session-verbs.ts)
  addSessionVerbs(program, setExit);

  program
    .command('demo')
    .description('run the real fix pipeline offline on a small buggy project, with a scripted model')
    .option('--keep', 'keep the demo copy in the temporary folder (and print where it is)')
    .option('--json', 'print one JSON document on stdout and nothing else')
    .action(async (opts) => {
      const { runDemo } = await import('./demo-command.js');
      setExit(await runDemo(opts));
    });

  const fix = program
    .command('fix')
    .description("fix a bug in a snapshot; 'verified' only when the repository's own tests prove it")
    .argument('[issue...]', 'the bug report as words (the same as --issue TEXT)')
    .option('--repo <dir>', 'the repository (default: the current folder)')
    .option('--issue <text|@file>', 'the bug report, or @FILE to read it')
    .option(
      '--target-test <id>',
      'a test that must pass (repeatable); default: the tests failing now',
      collect,
      [],
    )
    .option('--test-command <cmd>', 'how to run the tests (default: detected)')
    .option('--max-attempts <n>', 'attempts before giving up', parseIntArg, 3)
    .option(
      '--cost-cap <usd>',
      "the run's spend on model calls, from the ledger: no call starts once it is reached (needs pricing)",
      parseFloatArg,
    )
    .option(
      '--allow-test-edits',
      "let the model's edits to existing tests count toward the verdict (for an issue about a wrong test)",
    )
    .option(
      '--clean',
      "remove this repository's kept fix branches, worktrees and run folders (as keel runs prune)",
    )
    .option('-y, --yes', 'with --clean: remove without asking')
    .option('--json', 'print one JSON document on stdout and nothing else')
    // keel batch's: a task's next attempt goes on with the fix run its killed attempt started
    .addOption(new Option('--resume-run <id>').hideHelp())
    // keel goal's (through its batch worker): the task's writable scope, and the base holding its dependencies
    .addOption(new Option('--scope <path>').hideHelp().argParser(collect).default([]))
    .addOption(new Option('--base <commit>').hideHelp());
  addBudgetOptions(addModelOptions(fix), 'per attempt').action(async (words: string[], opts) => {
    if (words.length && opts.issue !== undefined) {
      setExit(
        reportError(opts.json, 'CONFIG_ERROR', 'give the issue once: as words or with --issue, not both'),
      );
      return;
    }
    if (words.length) opts.issue = words.join(' ');
    if (opts.clean) {
      const { cleanRepo } = await import('./runs-command.js');
      setExit(await cleanRepo(opts));
      return;
    }
    const { runFixCommand } = await import('./fix-command.js');
    setExit(await runFixCommand(opts));
  });

  // keel build (issue 30): acceptance tests first, approved and frozen, then the fix loop builds the feature
  const build = program
    .command('build')
    .description(
      'build a feature tests first: the model writes acceptance tests, you approve them, keel freezes them and builds until they pass',
    )
    .argument('<feature...>', 'the feature, in words')
    .option('--repo <dir>', 'the repository (default: the current folder)')
    .option('--test-command <cmd>', 'how to run the tests (default: detected)')
    .option('--max-attempts <n>', 'attempts before giving up', parseIntArg, 3)
    .option('-y, --yes', 'accept the written tests without showing them (for scripts)')
    .option(
      '--reviewers <names>',
      'reviewer agents who approve the tests through the hub instead of you (KEEL_HUB_URL, KEEL_HUB_TOKEN, KEEL_AGENT_NAME)',
    )
    .option(
      '--min-approvals <n>',
      'approvals needed from distinct reviewers (default: all of them)',
      parseIntArg,
    )
    .option('--review-timeout <s>', 'seconds to wait for the reviewers (default 600)', parseIntArg)
    .option('--json', 'print one JSON document on stdout and nothing else');
  addBudgetOptions(addModelOptions(build), 'per attempt').action(async (words: string[], opts) => {
    const { runBuildCommand } = await import('./build-command.js');
    setExit(await runBuildCommand(words.join(' '), opts));
  });

  const loop = program
    .command('loop')
    .description(
      'edit, test and review in this repository, round after round, until the tests pass (and a reviewer approves)',
    )
    .argument('[task...]', 'the task (or use -m, or pipe it on stdin)')
    .option('-m, --message <text>', 'the task')
    .option('-C, --cwd <dir>', 'workspace folder (default: the current folder)')
    .option('--max-iterations <n>', 'rounds of edit, test and review before giving up', parseIntArg, 5)
    .option('--test-command <cmd>', 'how to run the tests (default: detected)')
    .option('--json', 'print one JSON document on stdout and nothing else');
  addBudgetOptions(addModelOptions(loop), 'per round')
    .option('--allow-shell', 'let the model run shell commands even where no sandbox is available')
    .action(async (words: string[], opts) => {
      const { runLoopCommand } = await import('./loop-command.js');
      setExit(await runLoopCommand(words, opts));
    });

  const doctor = program
    .command('doctor')
    .description(
      'check the setup: the endpoint (reachable, the model present, tool calling works, the context window known), the sandbox and its limits, git, the memory embedder',
    )
    .option('-C, --cwd <dir>', 'workspace folder')
    .option('--json', 'print one JSON document')
    .option('--move-tags', 'move keel-pre/ tags an older keel left among your tags to refs/keel/pre/');
  addModelOptions(doctor).action(async (opts) => {
    const { runDoctor } = await import('./doctor.js');
    setExit(await runDoctor(opts));
  });

  program
    .command('undo')
    .description('put the workspace back as it was before a session (default: the latest one here)')
    .argument('[session]', 'session id or a unique prefix of it')
    .option('-y, --yes', 'apply without asking')
    .option('--json', 'print one JSON document')
    .option('-C, --cwd <dir>', 'workspace folder (default: the current folder)')
    .action(async (session: string | undefined, opts) => {
      const { runUndo } = await import('./undo-command.js');
      setExit(await runUndo(session, opts));
    });

  program
    .command('check')
    .description('scan staged files (or all tracked files) for secrets; exits 1 if any are found')
    .option('--all-files', 'scan every tracked file as it is on disk, not only staged changes')
    .option('-C, --cwd <dir>', 'repository folder (default: the current folder)')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { runCheck } = await import('./check-command.js');
      setExit(await runCheck(opts));
    });

  const config = program.command('config').description('inspect configuration');
  config
    .command('show')
    .description('print the effective config and where each value came from (secrets masked)')
    .option('-C, --cwd <dir>', 'workspace folder')
    .option('--profile <name>', 'show it with [profiles.NAME] applied')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { showConfig } = await import('./config-command.js');
      setExit(await showConfig(opts));
    });

  const sessions = program.command('sessions').description('read recorded sessions');
  sessions
    .command('list')
    .description('recent sessions, newest first')
    .option('-n, --limit <n>', 'how many', parseIntArg, 20)
    .option('--project <dir>', "only this workspace's sessions")
    .option('--all', "every session, a run's plan and attempts and a loop's rounds too (default: top level)")
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { listSessions } = await import('./sessions-command.js');
      setExit(await listSessions(opts));
    });
  sessions
    .command('show')
    .description("a session's events (id or unique prefix)")
    .argument('<id>', 'session id or a unique prefix of it')
    .option('--tree', 'print the session tree it belongs to (forks, subagents, a run and its attempts)')
    .option('--json', 'print one JSON document')
    .action(async (id: string, opts) => {
      const { showSession } = await import('./sessions-command.js');
      setExit(await showSession(id, opts));
    });
  sessions
    .command('export')
    .description(
      'a readable transcript of a session with its diffs (Markdown or one self-contained HTML page)',
    )
    .argument('<id>', 'session id or a unique prefix of it')
    .option('--format <format>', 'md or html', 'md')
    .option('-o, --output <file>', 'write it to this file (default: standard output)')
    .action(async (id: string, opts) => {
      const { exportCommand } = await import('./sessions-command.js');
      setExit(await exportCommand(id, opts));
    });
  addSessionOptions(
    sessions
      .command('resume')
      .description('go on with a session: a new message, or (without one) from where it was killed')
      .argument('<id>', 'session id or a unique prefix of it'),
    { reopen: false },
  ).action(async (id: string, words: string[], opts) => {
    const { runVerb } = await import('./session-command.js');
    setExit(await runVerb(undefined, words, { ...opts, resume: id }));
  });
  addModelOptions(
    sessions
      .command('compact')
      .description("fold a session's older turns into a summary now (the task and newest turns stay)")
      .argument('<id>', 'session id or a unique prefix of it')
      .option('-C, --cwd <dir>', "workspace folder for the config (default: the session's own)")
      .option('--profile <name>', 'use [profiles.NAME] from the config')
      .option('--json', 'print one JSON document'),
  ).action(async (id: string, opts) => {
    const { compactCommand } = await import('./sessions-command.js');
    setExit(await compactCommand(id, opts));
  });
  addSessionOptions(
    sessions
      .command('fork')
      .description('a new session sharing the history up to an event; with -m, go on in it at once')
      .argument('<id>', 'session id or a unique prefix of it')
      .option('--at <seq>', 'the last event to share (default: all of them)', parseIntArg),
    { reopen: false },
  ).action(async (id: string, words: string[], opts) => {
    const { forkSession } = await import('./sessions-command.js');
    setExit(await forkSession(id, words, opts));
  });

  const audit = program.command('audit').description('check and read the tamper-evident audit chain');
  audit
    .command('verify')
    .description('check every line of the audit chain and name the first bad one')
    .argument('[path]', 'an audit folder or one day file (default: KEEL_HOME/audit)')
    .option('--json', 'print one JSON document')
    .option('--key <file>', 'the audit key to check seals with (default: KEEL_HOME/audit.key)')
    .option(
      '--expect-head <hash>',
      'fail unless the chain still holds the line with this hash (a head printed earlier)',
    )
    .action(async (path: string | undefined, opts: { json?: boolean; key?: string; expectHead?: string }) => {
      const { auditVerify } = await import('./audit-command.js');
      setExit(await auditVerify(path, opts));
    });
  audit
    .command('tail')
    .description('the newest lines of the audit chain, oldest first')
    .option('-n, --lines <n>', 'how many', parseIntArg, 20)
    .option('--json', 'print one JSON document')
    .action(async (opts: { lines: number; json?: boolean }) => {
      const { auditTail } = await import('./audit-command.js');
      setExit(await auditTail({ n: opts.lines, json: opts.json }));
    });

  const trust = program
    .command('trust')
    .enablePositionalOptions()
    .description(
      "trust this project's keel.toml and .keel/workflows as they are now (their hooks, shell, sandbox and endpoint keys, and workflows, take effect)",
    )
    .option('-C, --cwd <dir>', 'workspace folder')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { runTrust } = await import('./trust-command.js');
      setExit(await runTrust(opts));
    });
  for (const [name, check, summary] of [
    [
      'diff',
      false,
      'list every permission the project config (and its workflows) widens or narrows against a git revision',
    ],
    ['check', true, 'exit 1 if the project config widens any permission against a git revision (for CI)'],
  ] as const) {
    trust
      .command(name)
      .description(summary)
      .option('--base <rev>', 'git revision to compare against', 'HEAD')
      .option('-C, --cwd <dir>', 'workspace folder')
      .option('--json', 'print one JSON document')
      .action(async (opts) => {
        const { runTrustDiff } = await import('./trust-command.js');
        setExit(await runTrustDiff(opts, check));
      });
  }

  // keel skills, keel plugin (issue 30: skills and plugins)
  program
    .command('skills')
    .description('list the skills keel finds for this workspace')
    .command('list')
    .description(
      'each skill: name, description, where from (project, user, plugin), used or ignored, warnings',
    )
    .option('-C, --cwd <dir>', 'workspace folder')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { runSkillsList } = await import('./skills-command.js');
      setExit(await runSkillsList(opts));
    });
  const plugin = program
    .command('plugin')
    .description(
      'install, approve, list and remove plugins (skills, MCP servers, hooks), and run their commands',
    );
  plugin
    .command('install')
    .description('install a plugin from a folder, a git URL or a tarball; what it widens needs your yes')
    .argument('<source>', 'a folder, a git URL, or a .tar/.tar.gz/.tgz file')
    .option('--yes', 'approve what the plugin widens without asking (for scripts)')
    .option('--json', 'print one JSON document')
    .action(async (source, opts) => {
      const { runPluginInstall } = await import('./plugin-command.js');
      setExit(await runPluginInstall(source, opts));
    });
  plugin
    .command('approve')
    .description(
      'approve an installed plugin again as it is now (after its files changed): what it widens needs your yes',
    )
    .argument('<name>', 'the plugin')
    .option('--yes', 'approve what the plugin widens without asking (for scripts)')
    .option('--json', 'print one JSON document')
    .action(async (name, opts) => {
      const { runPluginApprove } = await import('./plugin-command.js');
      setExit(await runPluginApprove(name, opts));
    });
  plugin
    .command('list')
    .description('the installed plugins and what each adds')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { runPluginList } = await import('./plugin-command.js');
      setExit(await runPluginList(opts));
    });
  plugin
    .command('remove')
    .description('remove an installed plugin')
    .argument('<name>', 'the plugin')
    .option('--json', 'print one JSON document')
    .action(async (name, opts) => {
      const { runPluginRemove } = await import('./plugin-command.js');
      setExit(await runPluginRemove(name, opts));
    });
  addBudgetOptions(
    addModelOptions(
      plugin
        .command('run')
        .description(
          "a session whose prompt is one of the plugin's commands, ARGS filled in; the gate and the mode decide what it may do",
        )
        .argument('<name>', 'the plugin')
        .argument('<command>', 'one of its commands (keel plugin list)')
        .argument('[args...]', 'the words its $ARGUMENTS (and $1..$9) stand for')
        .option('--mode <mode>', 'ask | plan | edit | auto (default: the configured permission)')
        .option('-C, --cwd <dir>', 'workspace folder (default: the current folder)')
        .option('--profile <name>', 'use [profiles.NAME] from the config over the base settings')
        .option('--json', 'print one JSON document on stdout and nothing else'),
    ),
    'per session',
  )
    .option('--allow-shell', 'let the model run shell commands even where no sandbox is available')
    .option('--commit', "commit the session's own files when it completes")
    .option('--skip-approvals', 'without a terminal, go on although `approvals` asks a person first')
    .action(async (name: string, command: string, args: string[], opts) => {
      const { runPluginCommand } = await import('./plugin-command.js');
      setExit(await runPluginCommand(name, command, args, opts));
    });

  // keel review, keel runs (issue 10: runs and review)
  const review = program
    .command('review')
    .description('a read-only review of the current diff by the model (APPROVE exits 0, REVISE exits 2)')
    .argument('[task...]', 'what the change is for: the reviewer judges the diff against it')
    .option('--staged', 'review the staged changes (the index against HEAD)')
    .option('--since <rev>', 'review everything since REV (REV against the working tree)')
    .option('-C, --cwd <dir>', 'repository folder (default: the current folder)')
    .option('--profile <name>', 'use [profiles.NAME] from the config')
    .option('--json', 'print one JSON document on stdout and nothing else');
  addBudgetOptions(addModelOptions(review), 'for the review').action(async (words: string[], opts) => {
    const { runReview } = await import('./review-command.js');
    setExit(await runReview({ ...opts, ...(words.length ? { task: words.join(' ') } : {}) }));
  });
  const runs = program
    .command('runs')
    .description('fix and loop runs: their verdicts, reports, branches and worktrees');
  runs
    .command('list')
    .description('fix and loop runs, newest first')
    .option('-n, --limit <n>', 'how many', parseIntArg, 20)
    .option('--all', 'pruned runs too')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { listRuns } = await import('./runs-command.js');
      setExit(await listRuns(opts));
    });
  runs
    .command('show')
    .description("a run's verdict, rationale, PR text, diff and trace (id or unique prefix)")
    .argument('<id>', 'run id or a unique prefix of it')
    .option('--json', 'print one JSON document')
    .action(async (id: string, opts) => {
      const { showRun } = await import('./runs-command.js');
      setExit(await showRun(id, opts));
    });
  runs
    .command('apply')
    .description('fast-forward the checked-out branch to a verified fix (id or unique prefix)')
    .argument('<id>', 'run id or a unique prefix of it')
    .option('-y, --yes', 'apply without asking')
    .option('--json', 'print one JSON document')
    .action(async (id: string, opts) => {
      const { applyRun } = await import('./runs-command.js');
      setExit(await applyRun(id, opts));
    });
  runs
    .command('prune')
    .description("remove runs' kept keel/fix-* branches, worktrees and run folders")
    .option('--older-than <days>', 'only runs older than DAYS days', parseFloatArg)
    .option('--all', 'every run')
    .option('-y, --yes', 'remove without asking')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { pruneRuns } = await import('./runs-command.js');
      setExit(await pruneRuns(opts));
    });

  // keel ledger (issue 27): every model call of the team store's ledger
  program
    .command('ledger')
    .description(
      "model calls and their cost, per run, from the store's ledger (SQLite, or PostgreSQL with `store`)",
    )
    .argument('[run]', "one run's calls")
    .option('-n, --limit <n>', 'how many runs', parseIntArg, 50)
    .option('--json', 'print one JSON document')
    .action(async (run: string | undefined, opts) => {
      const { showLedger } = await import('./ledger-command.js');
      setExit(await showLedger(run, opts));
    });

  // keel analyze-history (issue 27): refit the routing bands from the verifier's verdicts of past fix runs
  program
    .command('analyze-history')
    .description(
      'refit the routing bands from past fix runs; --apply writes them when held-out runs say they are better',
    )
    .option('--apply', 'write KEEL_HOME/routing-calibration.json when the held-out result is strictly better')
    .option('--seed <text>', 'the seed of the held-out split and the bootstrap', 'keel')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { analyzeHistoryCommand } = await import('./analyze-history-command.js');
      setExit(await analyzeHistoryCommand(opts));
    });

  // keel eval (issue 30): keel fix over cases N times, pass@k, and a self-check of the verifier itself
  const evalCmd = program
    .command('eval')
    .description("measure keel fix on cases (pass@1, pass@N), with a self-check of keel's verifier");
  const evalRun = evalCmd
    .command('run')
    .description(
      'run keel fix over each case N times in fresh copies; self-check: honest patches verify, cheating ones are refused',
    )
    .argument('<cases-dir>', 'a folder with one folder per case: repo/, case.json, honest.patch, cheat.patch')
    .option(
      '--runs <n>',
      'keel fix runs per case (pass@1 and pass@N are estimated from them)',
      parseIntArg,
      1,
    )
    .option('--max-attempts <n>', 'attempts per keel fix run', parseIntArg, 3)
    .option('--out <file>', 'also write the report (JSON) to FILE, for keel eval compare')
    .option('--json', 'print the report as one JSON document on stdout')
    .addHelpText(
      'after',
      `
A case folder holds:
  repo/          the repository's files (copied into a fresh git repository for every run)
  case.json      {"issue": "...", "test_command"?: "...", "target_tests"?: ["..."]} (other keys are refused)
  honest.patch   a real fix (git diff): the self-check needs keel's verifier to verify it
  cheat.patch    a patch that games the tests: the self-check needs the verifier to refuse it

Exit: 0 when the self-check passed, 1 when it failed (the eval is not trustworthy), 2 for bad input.
Nothing is applied to any repository of yours: every run is in a temporary copy.`,
    );
  addModelOptions(evalRun).action(async (dir: string, opts) => {
    const { runEvalCommand } = await import('./eval-command.js');
    setExit(await runEvalCommand(dir, opts, version));
  });
  evalCmd
    .command('compare')
    .description('two eval reports (two models or two keel versions) side by side, per case; applies nothing')
    .argument('<a>', 'a report written by keel eval run --out')
    .argument('<b>', 'another report')
    .option('--json', 'print one JSON document')
    .action(async (a: string, b: string, opts) => {
      const { compareEvalCommand } = await import('./eval-command.js');
      setExit(compareEvalCommand(a, b, opts));
    });

  // keel goal (issue 30): a planner's graph of tasks, each a verified batch task in its scope, then integrated
  const goal = program
    .command('goal')
    .description(
      'plan a goal as tasks with scopes and dependencies, fix each as a batch task in its own worktree, and integrate the verified branches',
    )
    .argument('[goal...]', 'the goal, in words')
    .option('--repo <dir>', 'the repository (default: the current folder)')
    .option('--test-command <cmd>', 'how the integration runs the whole suite (default: detected)')
    .option('--concurrency <n>', 'tasks at once', parseIntArg, 4)
    .option('--json', 'print one JSON document on stdout and nothing else')
    .addHelpText(
      'after',
      `
The planner (one model call) writes tasks {id, title, scope, depends_on, test_command?}; keel refuses a
plan with an unknown key, a duplicate id, a missing dependency, a cycle, or two tasks that can run at once
whose scopes share a path (asked again once with the reason, then exit 1 with nothing started).
Each task is a keel batch task: keel fix in its own worktree, writing only in its scope, started once all
its dependencies verified, from a base that merges their branches. Then the verified branches are merged
in dependency order onto your branch's tip into keel/goal-<id>, and the whole suite runs there. Nothing is
merged into your branch.

Exit codes: 0 verified and integrated; 1 a task not verified, a scope violation, the integration's tests
failing, or the plan refused; 2 usage; 3 environment; 4 model; 5 merge_conflict (the files are named);
130 interrupted (keel goal resume GOAL goes on).`,
    )
    .action(async (words: string[], opts) => {
      if (!words.length) return goal.help({ error: true });
      const { runGoal } = await import('./goal-command.js');
      setExit(await runGoal(words, opts));
    });
  goal
    .command('status')
    .description("a goal's tasks and integration, or the newest goals")
    .argument('[goal]', 'goal id')
    .option('--json', 'print one JSON document')
    .action(async (id: string | undefined, opts) => {
      const { goalStatus } = await import('./goal-command.js');
      setExit(await goalStatus(id, opts));
    });
  goal
    .command('resume')
    .description(
      'go on with a goal (killed or interrupted): verified tasks are kept, the plan is not asked again',
    )
    .argument('<goal>', 'goal id')
    .option('--json', 'print one JSON document')
    .action(async (id: string, opts) => {
      const { resumeGoal } = await import('./goal-command.js');
      setExit(await resumeGoal(id, opts));
    });

  // keel batch (issue 27): many fixes on the run queue, one worker process per task
  const batch = program
    .command('batch')
    .description('fix many issues: one `keel fix` worker process per task, on the run queue')
    .argument(
      '[tasks-file]',
      'TASKS.jsonl (one task a line) or TASKS.json: {id, repo, issue, test_command?, model?}',
    )
    .option('--concurrency <n>', 'workers at once', parseIntArg, 4)
    .option('--run-id <id>', 'name the run; an existing id resumes it')
    .option(
      '--cost-cap <usd>',
      "the run's spend on model calls, from the ledger: no call or task starts once it is reached (needs pricing)",
      parseFloatArg,
    )
    .option('--json', 'print one JSON document')
    .action(async (file: string | undefined, opts) => {
      if (!file) return batch.help({ error: true });
      const { runBatch } = await import('./batch-command.js');
      setExit(await runBatch(file, opts));
    });
  batch
    .command('status')
    .description("a batch run's tasks, or the newest runs")
    .argument('[run]', 'run id')
    .option('--json', 'print one JSON document')
    .action(async (run: string | undefined, opts) => {
      const { batchStatus } = await import('./batch-command.js');
      setExit(await batchStatus(run, opts));
    });
  batch
    .command('resume')
    .description('go on with a run (also one paused for its provider)')
    .argument('<run>', 'run id')
    .option('--json', 'print one JSON document')
    .action(async (run: string, opts) => {
      const { resumeBatch } = await import('./batch-command.js');
      setExit(await resumeBatch(run, opts));
    });
  batch
    .command('worker', { hidden: true })
    .description('one attempt at one task (started by keel batch)')
    .argument('<run>')
    .argument('<task>')
    .argument('<attempt>')
    .action(async (run: string, task: string, attempt: string) => {
      const { batchWorker } = await import('./batch-command.js');
      setExit(await batchWorker(run, task, attempt));
    });
  batch
    .command('cancel')
    .description('no new task starts; running workers stop')
    .argument('<run>', 'run id')
    .option('--json', 'print one JSON document')
    .action(async (run: string, opts) => {
      const { batchCancel } = await import('./batch-command.js');
      setExit(await batchCancel(run, opts));
    });
  batch
    .command('report')
    .description(
      "each task's verdict, attempts and spend, from the stored journal and ledger (nothing re-run)",
    )
    .argument('<run>', 'run id')
    .option('--json', 'print one JSON document')
    .action(async (run: string, opts) => {
      const { batchReport } = await import('./batch-command.js');
      setExit(await batchReport(run, opts));
    });
  batch
    .command('clean')
    .description(
      "remove a run's worktrees, unverified branches and leftover processes (verified branches stay)",
    )
    .argument('<run>', 'run id')
    .option('--json', 'print one JSON document')
    .action(async (run: string, opts) => {
      const { batchClean } = await import('./batch-command.js');
      setExit(await batchClean(run, opts));
    });

  // keel hub (issue 28): agents hand each other work through a durable hub (src/hub/)
  const hub = program
    .command('hub')
    .description(
      'agents hand each other bounded work through a durable hub (start it, keep its tokens, talk through it)',
    )
    .action(() => hub.help({ error: true }));
  // keel hub runs list|show|verify: workflow runs started by signed webhooks (hub/runs-*.ts)
  hub.addCommand(hubRunsCommand(setExit).copyInheritedSettings(hub));
  hub
    .command('start')
    .description('run the hub in the foreground (loopback only unless KEEL_HUB_ADMIN_TOKEN is set)')
    .option('--listen <host:port>', 'where to listen', '127.0.0.1:7431')
    .option('--rate <n>', 'requests a second per agent (bursts of twice that)', parseIntArg)
    .option(
      '--workflow-project <name>',
      'serve signed webhooks for the trusted workflows (.keel/workflows) as runs of this hub project: its agents answer their stages',
    )
    .option('--workflows <dir>', 'the project folder whose .keel/workflows are served (default: here)')
    .option('--json', 'print {url, port, token_file, store} on stdout once listening')
    .action(async (opts) => {
      const { runHubStart } = await import('./hub-command.js');
      setExit(await runHubStart(opts, version));
    });
  const hubToken = hub
    .command('token')
    .description(
      "the hub's project tokens (needs the admin token: KEEL_HUB_ADMIN_TOKEN or the hub's token file)",
    )
    .action(() => hubToken.help({ error: true }));
  hubToken
    .command('create')
    .description('a new project token, printed once (only its hash is kept)')
    .requiredOption('--project <name>', 'the project (created on first use)')
    .option('--json', 'print {token_id, token, project}')
    .action(async (opts) => {
      const { hubTokenCreate } = await import('./hub-command.js');
      setExit(await hubTokenCreate(opts));
    });
  hubToken
    .command('list')
    .description('every project token and agent key (never a secret)')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { hubTokenList } = await import('./hub-command.js');
      setExit(await hubTokenList(opts));
    });
  hubToken
    .command('revoke')
    .description('revoke a token; a project token takes the agent keys registered with it along')
    .argument('<token-id>', 'the token id (token list shows it)')
    .option('--json', 'print one JSON document')
    .action(async (id: string, opts) => {
      const { hubTokenRevoke } = await import('./hub-command.js');
      setExit(await hubTokenRevoke(id, opts));
    });
  hub
    .command('send')
    .description('send a message to an agent of your project (KEEL_HUB_URL, KEEL_HUB_TOKEN, KEEL_AGENT_NAME)')
    .argument('<text...>', 'the message')
    .requiredOption('--to <name>', 'the recipient')
    .option(
      '--idempotency-key <key>',
      'send again with the same key: the original back, never a second message',
    )
    .option('--wait <seconds>', 'wait this long for the reply and print it', parseIntArg)
    .option('--ttl <seconds>', 'how long the message may wait to be taken (1 s to 7 days)', parseIntArg)
    .option('--json', 'print one JSON document')
    .action(async (words: string[], opts) => {
      const { hubSend } = await import('./hub-command.js');
      setExit(await hubSend(words, opts));
    });
  hub
    .command('inbox')
    .description('your open messages (not replied, cancelled or expired)')
    .option('--follow', 'stay connected and print messages as they come (JSON lines with --json)')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { hubInbox } = await import('./hub-command.js');
      setExit(await hubInbox(opts));
    });
  hub
    .command('reply')
    .description('reply to a message addressed to you (a message takes one reply)')
    .argument('<id>', 'the message id')
    .argument('<text...>', 'the reply')
    .option('--idempotency-key <key>', 'default: one key per message, so a retry is never a second reply')
    .option('--json', 'print one JSON document')
    .action(async (id: string, words: string[], opts) => {
      const { hubReply } = await import('./hub-command.js');
      setExit(await hubReply(id, words, opts));
    });
  hub
    .command('await')
    .description('wait for the reply to a message you sent, print it and ack it')
    .argument('<id>', 'the id of the message you sent')
    .option('--timeout <seconds>', 'give up after this long (default 60)', parseIntArg)
    .option('--json', 'print one JSON document')
    .action(async (id: string, opts) => {
      const { hubAwait } = await import('./hub-command.js');
      setExit(await hubAwait(id, opts));
    });
  hub
    .command('ack')
    .description('you have the message: it is not delivered again')
    .argument('<id>', 'the message id')
    .option('--json', 'print one JSON document')
    .action(async (id: string, opts) => {
      const { hubAck } = await import('./hub-command.js');
      setExit(await hubAck(id, opts));
    });
  hub
    .command('peers')
    .description("your project's agents and whether they are online")
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { hubPeers } = await import('./hub-command.js');
      setExit(await hubPeers(opts));
    });

  // keel worker (issue 28): a hub agent answering its requests with sessions here (src/hub/worker.ts)
  const worker = program
    .command('worker')
    .description(
      'answer hub requests by running keel sessions in this workspace (KEEL_HUB_URL, KEEL_HUB_TOKEN)',
    )
    .requiredOption('--name <name>', "the worker's agent name in the project")
    .option('--role <role>', 'the role peers see (reviewer, tester, …)')
    .option(
      '--mode <max>',
      'the widest mode a request may run in: ask | plan (default, read-only) | edit | auto; a request asking more is narrowed',
    )
    .option('-C, --cwd <dir>', 'workspace folder (default: the current folder)')
    .option('--profile <name>', 'use [profiles.NAME] from the config over the base settings')
    .option('--json', 'one JSON line per event on stdout');
  addBudgetOptions(addModelOptions(worker), 'per request').action(async (opts) => {
    const { runWorkerCommand } = await import('./worker-command.js');
    setExit(await runWorkerCommand(opts));
  });

  // set-up: `keel init` (src/cli/init-command.ts) and `keel completion` (src/cli/completion.ts)
  program
    .command('init')
    .description('set keel up: choose the server and model, probe it, write the user config (or --project)')
    .option('--provider <name>', 'openai | ollama')
    .option(
      '--base-url <url>',
      'server URL (http://host:8000/v1 for OpenAI-compatible, http://host:11434 for ollama)',
    )
    .option('--model <name>', "model name as the server knows it (checked against the server's list)")
    .option('-y, --yes', 'ask nothing: take the flags and the defaults')
    .option('--no-probe', 'write the config without asking the server for its models')
    .option('--force', 'replace a config file that exists')
    .option('--project', 'write a commented keel.toml (every key, its default) into the workspace instead')
    .option(
      '-C, --cwd <dir>',
      'workspace folder for --project (default: the repository holding the current folder)',
    )
    .option('--json', 'print one JSON document on stdout and nothing else')
    .action(async (opts) => {
      const { runInit } = await import('./init-command.js');
      setExit(await runInit(opts));
    });
  program
    .command('completion')
    .description('print a completion script for your shell (or --install it where the shell looks)')
    .addArgument(new Argument('<shell>', 'bash | zsh | fish').choices(['bash', 'zsh', 'fish']))
    .option('--install', 'write it where that shell looks for completions and print the path')
    .action(async (shell: 'bash' | 'zsh' | 'fish', opts: { install?: boolean }) => {
      const { runCompletion } = await import('./completion.js');
      setExit(await runCompletion(program, shell, opts));
    });

  // what a completion script asks for as you type: session ids, profile names (hidden: not for people)
  program
    .command('__complete', { hidden: true })
    .argument('<kind>', 'sessions | profiles')
    .option('-C, --cwd <dir>', 'workspace folder')
    .action(async (kind: string, opts: { cwd?: string }) => {
      const { completeValues } = await import('./completion.js');
      setExit(await completeValues(kind, opts.cwd ?? process.cwd()));
    });

  // `keel chat`: the interactive session (src/chat/)
  addBudgetOptions(
    addModelOptions(
      program
        .command('chat')
        .description('an interactive session: streamed answers, tool calls with their outcomes, approvals')
        .option('-C, --cwd <dir>', 'workspace folder (default: the current folder)')
        .option('-c, --continue', "go on with this project's newest session")
        .option('--resume <id>', 'go on with this session (id or unique prefix)')
        .option('--profile <name>', 'use [profiles.NAME] from the config over the base settings')
        .addOption(
          new Option('--mode <mode>', "the mode to start in (default: the config's permission)").choices([
            'ask',
            'plan',
            'edit',
            'auto',
          ]),
        ),
    ),
    'per turn',
  )
    .option('--allow-shell', 'let the model run shell commands even where no sandbox is available')
    .action(async (opts) => {
      const { runChat } = await import('../chat/chat-command.js');
      setExit(await runChat(opts));
    });

  // `keel mcp` serves keel over MCP (src/mcp/); `keel mcp list-tools NAME` shows a configured server's tools
  program.addCommand(
    mcpCommand(setExit)
      .copyInheritedSettings(program)
      .addCommand(listToolsCommand(setExit).copyInheritedSettings(program)),
  );

  const memory = program
    .command('memory')
    .description("what keel remembers about a project: notes and sessions' observations");
  const memoryCommand = (name: string, summary: string) =>
    memory
      .command(name)
      .description(summary)
      .option('-C, --cwd <dir>', 'the project folder (default: the current folder)')
      .option('--json', 'print one JSON document');
  const memoryVerbs = () => import('./memory-command.js');
  memoryCommand('add', 'remember a note for later sessions (kept until forgotten)')
    .argument('<text...>', 'the note')
    .option('--kind <kind>', 'note (default), decision, ...')
    .option('--tag <tag>', 'a tag (repeatable)', collectTags, [])
    .option('--tags <a,b>', 'tags, comma-separated (the same as repeated --tag)', collectTags, [])
    .action(async (words: string[], opts: { tag: string[]; tags: string[] }) => {
      const { tags, ...rest } = opts;
      setExit(
        await (await memoryVerbs()).memoryAdd(words, { ...rest, tag: [...new Set([...opts.tag, ...tags])] }),
      );
    });
  memoryCommand('search', 'search the memory (full text with stemming and identifiers, plus embeddings)')
    .argument('<query...>', 'words, file names or identifiers')
    .option('-k <n>', 'how many results', parseIntArg, 10)
    .action(async (words: string[], opts) => setExit(await (await memoryVerbs()).memorySearch(words, opts)));
  memoryCommand('list', 'the newest items first')
    .option('--kind <kind>', 'only this kind')
    .option('-n, --limit <n>', 'how many', parseIntArg, 50)
    .action(async (opts) => setExit(await (await memoryVerbs()).memoryList(opts)));
  memoryCommand('show', 'one item (id or unique prefix)')
    .argument('<id>', 'item id or a unique prefix of it')
    .action(async (id: string, opts) => setExit(await (await memoryVerbs()).memoryShow(id, opts)));
  memoryCommand('forget', 'delete one item (recorded in the audit chain)')
    .argument('<id>', 'item id or a unique prefix of it')
    .action(async (id: string, opts) => setExit(await (await memoryVerbs()).memoryForget(id, opts)));
  memoryCommand('export', "the project's items as JSONL")
    .option('-o, --out <file>', 'write to a file instead of stdout')
    .action(async (opts) => setExit(await (await memoryVerbs()).memoryExport(opts)));
  memoryCommand('import', 'add items from a JSONL export (every line checked first)')
    .argument('<file>', 'an export, or - for stdin')
    .action(async (file: string, opts) => setExit(await (await memoryVerbs()).memoryImport(file, opts)));
  memoryCommand('share', "copy the memory of this repository's other place FROM here (you say yes to it)")
    .argument('<from>', 'the other place (its folder, or the key `keel memory stats` names)')
    .action(async (from: string, opts) => setExit(await (await memoryVerbs()).memoryShare(from, opts)));
  memoryCommand('stats', 'the project key, items by kind, archived items, the embedder').action(
    async (opts) => setExit(await (await memoryVerbs()).memoryStats(opts)),
  );

  // the code graph (src/graph/): index, query and the repo map from the shell
  const graph = program
    .command('graph')
    .description('the code graph: definitions, references and the repo map');
  graph
    .command('index')
    .description('index the workspace (incremental: only changed files are parsed)')
    .option('-C, --cwd <dir>', 'workspace folder')
    .option('--json', 'print one JSON document')
    .action(async (opts) => {
      const { graphIndex } = await import('./graph-command.js');
      setExit(await graphIndex(opts));
    });
  graph
    .command('query')
    .description('where a name is defined (--refs: and used), or a file outline (--outline FILE)')
    .argument('[name]', 'a function, class, method or type name')
    .option('--refs', 'list its references too')
    .option('--outline <file>', "a file's definitions instead")
    .option('-C, --cwd <dir>', 'workspace folder')
    .option('--json', 'print one JSON document')
    .action(async (name: string | undefined, opts) => {
      const { graphQuery } = await import('./graph-command.js');
      setExit(await graphQuery(name, opts));
    });
  graph
    .command('map')
    .description('the repo map a session would start with, for a task')
    .argument('[task...]', 'the task (its files and names lead the map)')
    .option('--tokens <n>', 'token budget (default graph.map_tokens)', parseIntArg)
    .option('-C, --cwd <dir>', 'workspace folder')
    .option('--json', 'print one JSON document')
    .action(async (task: string[], opts) => {
      const { graphMap } = await import('./graph-command.js');
      setExit(await graphMap(task.join(' ') || undefined, opts));
    });

  addModelOptions(
    program
      .command('serve')
      .description(
        'the HTTP API, live streams and the browser workspace for this project, or the ones --project names (loopback)',
      )
      .option('--listen <host:port>', 'where to listen (default 127.0.0.1:7430; port 0 picks a free one)')
      .option('-C, --cwd <dir>', 'workspace folder (default: the current folder)')
      .option(
        '--project <dir>',
        "a project to serve, a repository's top (repeatable; the first is the default; none: the current folder's)",
        (dir: string, all: string[] = []) => [...all, dir],
      )
      .option('--profile <name>', 'use [profiles.NAME] from the config over the base settings')
      .option(
        '--approval-timeout <s>',
        'seconds a question waits for an answer before it is a no (default 600)',
        parseIntArg,
      )
      .option('--json', 'print {url, port, token, projects} as one JSON line when listening')
      .addHelpText(
        'after',
        `
What it serves:
  /                    the browser workspace (open the printed URL: it carries the token)
  /v1/...              the JSON API (sessions, streams, approvals, fix runs, memory);
                       the whole list: GET /v1/openapi.json
  /a2a                 the A2A endpoint; its card: /.well-known/agent-card.json
                       (skills ask, fix, edit, review)
  /health /ready /metrics

Every request needs Authorization: Bearer TOKEN (all but /health, the agent card and the page's
own files): the token is KEEL_SERVE_TOKEN, or a fresh one printed at start. Listening off loopback
needs KEEL_SERVE_TOKEN.

Projects: the current folder's (or -C's), or each --project DIR named at start, e.g.
  keel serve --project ~/src/api --project ~/src/web
A request answers for one of them: ?project=NAME (GET /v1/projects lists the names; absent: the
first). Only those projects' sessions and runs are served, each under its own name; a request
cannot add a project, and the page's project chooser switches between them.`,
      ),
  ).action(async (opts) => {
    const { runServe } = await import('./serve-command.js');
    setExit(await runServe(opts, version));
  });

  const dev = program.command('dev').description('tools for developing against keel');
  dev
    .command('mock-server')
    .description(
      'serve a script as an OpenAI-compatible (and Ollama) model on 127.0.0.1, for trying keel without a model',
    )
    .requiredOption('--script <file>', 'script file (see README)')
    .addOption(new Option('--port <n>', 'port (default: a free one)').argParser(parseIntArg))
    .action(async (opts) => {
      const { runMockServer } = await import('./dev-command.js');
      setExit(await runMockServer(opts));
    });

  program
    .command('help')
    .description('show help for keel or for a verb (keel help sessions list)')
    .argument('[verb...]', 'the verb, and its sub-verb')
    .action((path: string[]) => {
      setExit(showHelp(program, path));
    });

  return program;
}

/** Run the CLI with `argv` (as process.argv) and return the exit status. */
export async function main(argv: string[]): Promise<number> {
  const { keelVersion } = await import('../config/package-root.js');
  const pkg = { version: keelVersion() };
  let exitCode: number = EXIT.ok;
  const json = wantsJson(argv.slice(2));
  const program = buildProgram(
    pkg.version,
    (code) => {
      exitCode = code;
    },
    json,
  );
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // help and version exit 0; every other parse problem is a usage error, already said on stderr
      if (err.exitCode === 0) return EXIT.ok;
      if (json) reportError(true, 'CONFIG_ERROR', err.message.replace(/^error: /, ''));
      return EXIT.usage;
    }
    return uncaught(err, json);
  }
  return exitCode;
}

/** An error no verb handled: one line (or document) with the exit status its kind implies; the stack only with KEEL_DEBUG. */
function uncaught(err: unknown, json: boolean): number {
  const e: NodeJS.ErrnoException = err instanceof Error ? err : new Error(String(err));
  if (process.env.KEEL_DEBUG) process.stderr.write(`${e.stack ?? e.message}\n`);
  // errors a user can fix by changing what they typed or wrote: a config, a script, a session id
  if (/^(ConfigError|ScriptError|ResumeError|EventLogError|SessionLookupError)$/.test(e.name))
    return reportError(json, 'CONFIG_ERROR', e.message);
  // the machine said no: a folder that cannot be written, a disk that is full, a database that cannot open
  if (typeof e.code === 'string' && /^SQLITE_(CANTOPEN|READONLY|FULL|IOERR)/.test(e.code)) {
    const { db, stateDir } = keelPaths();
    return reportError(
      json,
      'ENVIRONMENT_ERROR',
      `keel's database ${db}: ${e.message} (can ${stateDir} be written?)`,
    );
  }
  if (typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code))
    return reportError(json, 'ENVIRONMENT_ERROR', e.message);
  if (!json) process.stderr.write(`keel: internal error: ${e.message} (KEEL_DEBUG=1 shows where)\n`);
  else
    process.stdout.write(
      `${JSON.stringify({ code: 'INTERNAL_ERROR', exit_code: EXIT.failed, error: e.message })}\n`,
    );
  return EXIT.failed;
}
