/**
 * `keel analyze-history [--apply] [--json]`: refit the routing bands from past fix runs (src/fix/history.ts),
 * and with --apply write KEEL_HOME/routing-calibration.json only when the held-out runs say it is better.
 */
import { openRuntime } from '../agent/runtime.js';
import { newSessionId } from '../agent/session.js';
import { keelPaths } from '../config/paths.js';
import { analyzeHistory, collectHistory, type HistoryAnalysis } from '../fix/history.js';
import { thresholdsFor, writeCalibration } from '../model/difficulty.js';
import { routingTiers } from '../model/routing.js';
import { appendAudited } from '../store/audit-entries.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load } from '../term/options.js';
import { reportError } from './errors.js';

interface Flags extends CommonFlags {
  apply?: boolean;
  seed?: string;
}

function document(a: HistoryAnalysis, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    runs: a.runs,
    excluded: a.excluded,
    train_runs: a.train,
    heldout_runs: a.heldout,
    current_thresholds: a.current,
    fitted_thresholds: a.fitted,
    heldout: {
      current_accuracy: a.currentAccuracy,
      fitted_accuracy: a.fittedAccuracy,
      improvement: a.improvement,
      interval: a.interval,
    },
    verdict: a.verdict,
    ...extra,
  };
}

export async function analyzeHistoryCommand(flags: Flags): Promise<number> {
  let tiers: number;
  let current: { thresholds: number[]; source: string };
  try {
    const { loaded } = load(flags);
    tiers = routingTiers(loaded.config).length;
    if (tiers < 2)
      throw new ConfigError(
        'routing needs at least two [[routing.tiers]] in your config for there to be bands to fit',
      );
    current = thresholdsFor(tiers, keelPaths());
  } catch (err) {
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    throw err;
  }
  const seed = flags.seed ?? 'keel';
  const runtime = openRuntime();
  try {
    const analysis = analyzeHistory(collectHistory(runtime.log, tiers), current.thresholds, seed);
    let applied: string | null = null;
    if (flags.apply && analysis.apply) {
      const heldout = {
        runs: analysis.heldout,
        current_accuracy: analysis.currentAccuracy,
        fitted_accuracy: analysis.fittedAccuracy,
        improvement: analysis.improvement,
        interval: analysis.interval,
        seed,
      };
      applied = writeCalibration(runtime.paths, {
        version: 1,
        thresholds: analysis.fitted,
        fitted_at: new Date().toISOString(),
        runs: analysis.runs,
        heldout,
      });
      // who changed the bands, from what to what, on which evidence: in the audit chain
      const id = newSessionId();
      runtime.log.createSession({
        id,
        mode: 'analyze-history',
        cwd: process.cwd(),
        provider: '',
        model: '',
        prompt: '',
      });
      appendAudited(runtime.log, runtime.audit, id, 'routing_calibrated', {
        file: applied,
        previous: current.thresholds,
        previous_from: current.source,
        thresholds: analysis.fitted,
        runs: analysis.runs,
        heldout,
      });
    }
    const decision = !flags.apply
      ? analysis.apply
        ? 'would apply (run with --apply)'
        : analysis.verdict
      : applied
        ? `applied: ${applied}`
        : analysis.verdict;
    if (flags.json) {
      process.stdout.write(
        `${JSON.stringify(document(analysis, { thresholds_from: current.source, applied, decision }), null, 2)}\n`,
      );
      return EXIT.ok;
    }
    const excluded = Object.entries(analysis.excluded)
      .map(([why, n]) => `${n} ${why}`)
      .join(', ');
    const lines = [
      `routed fix runs: ${analysis.runs} (${analysis.train} to fit, ${analysis.heldout} held out)${excluded ? `; left out: ${excluded}` : ''}`,
      `bands in force: [${current.thresholds.join(', ')}] (${current.source})`,
      `fitted bands:   [${analysis.fitted.join(', ')}]`,
      analysis.heldout
        ? `held out: ${analysis.currentAccuracy} routed right now, ${analysis.fittedAccuracy} fitted; difference ${analysis.improvement}, 95% interval [${analysis.interval?.join(', ')}]`
        : 'held out: no runs',
      analysis.apply ? analysis.verdict : '',
      decision,
    ].filter(Boolean);
    for (const line of lines) process.stdout.write(`${inertLine(line)}\n`);
    return EXIT.ok;
  } finally {
    runtime.close();
  }
}
