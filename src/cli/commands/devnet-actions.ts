/** What `c0mpute devnet` runs (devnet.ts declares it): loaded only then. */
import { RUN_SIGNAL_EXIT, RUN_STOP_SIGNALS, type RunStopSignal } from '../run-interrupt.js';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { C0Error } from '../../errors.js';
import { startTimeoutFlag } from './devnet-flags.js';
import { DEVNET_START_TIMEOUT_MS, Devnet, dirFateLine, type DirFate } from '../../devnet/devnet.js';
import { apiCall } from '../../node/api.js';
import { consoleLoginUrl } from '../../node/console-routes.js';
import { renderEvent, renderExplanation, shortAddr } from '../render.js';
import { out } from '../context.js';
import { runOverlayScenario } from '../../devnet/overlay-scenario.js';
import { runOrdersScenario } from '../../devnet/orders-scenario.js';
import { runPoolScenario } from '../../devnet/pool-scenario.js';
import { runTrainingScenario } from '../../devnet/training-scenario.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { WireEvent } from '../../node/events.js';

const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', '..', 'bin', 'c0mpute.js');

export interface DevnetOpts {
  providers: string;
  policy: string;
  jobs: string;
  keep?: boolean;
  dir?: string;
  overlay?: boolean;
  orders?: boolean;
  pool?: boolean;
  training?: boolean;
  startTimeout?: string;
}

/** `--start-timeout <seconds>`: a whole number of seconds from 1 to 3600, as ms (default DEVNET_START_TIMEOUT_MS). */
export function startTimeoutMs(v: string | undefined): number {
  return startTimeoutFlag(v) ?? DEVNET_START_TIMEOUT_MS;
}

/** `c0mpute devnet`: the default walk, or one of the scenarios; its flags already checked (checkDevnetFlags, before this module loads). */
export async function devnet(o: DevnetOpts): Promise<void> {
  const wait = startTimeoutMs(o.startTimeout);
  if (o.overlay) return overlayScenario(o, wait);
  if (o.orders) return ordersScenario(o, wait);
  if (o.pool) return poolScenario(o, wait);
  if (o.training) return trainingScenario(o);
  const providers = Number(o.providers);
  const jobs = Number(o.jobs);
  const net = new Devnet({ providers, policy: o.policy, jobs, keep: !!o.keep, ...(o.dir ? { dir: o.dir } : {}), bin: BIN, startTimeoutMs: wait });
  await withDevnet(net, async () => {
    const { api } = await net.start();
    const names = net.names();
    // The job: 16 GiB of memory in eu-west or us-east. One provider has too
    // little memory, one has not disclosed a region: eligibility says so.
    for (let i = 1; i <= jobs; i++) {
      out(`\n=== job ${i} of ${jobs}: 200k rounds of SHA-256, policy ${o.policy} ===`);
      const input = Buffer.from(`devnet job ${i} at ${new Date().toISOString()}`);
      const result = await net.runJob(
        api,
        {
          workload: 'builtin.sha256',
          params: '200000',
          maxPrice: { amount: '0.01', currency: 'USD' },
          deadlineMs: 60_000,
          requirements: { memoryMiB: 16384, regions: ['eu-west', 'us-east'] },
          policy: o.policy,
          input: input.toString('base64'),
        },
        (ev) => renderEvent(ev, names, (s) => out(net.named(s))),
      );
      if (result.status === 'completed') {
        const output = Buffer.from(result.output as string, 'base64').toString('utf8');
        const rc = result.receipt as { address: string; record: { offer: string; job: string } };
        const acc = result.acceptance as { address: string; record: { receipt: string } };
        const sel = result.selection as { address: string; record: { winner: string; job: string } };
        out(`▸ output ${output}`);
        out(`▸ links: job ${shortAddr(sel.record.job)} ← offer ${shortAddr(rc.record.offer)} (selection ${shortAddr(sel.address)}) ← receipt ${shortAddr(rc.address)} ← acceptance ${shortAddr(acc.address)}`);
      } else {
        const x = (result.decision as { result: { explanation?: Parameters<typeof renderExplanation>[0] } } | undefined)?.result.explanation;
        if (x) renderExplanation(x, names);
        throw new C0Error('DEVNET_JOB_FAILED', `job ${i} ended ${String(result.status)}: ${JSON.stringify(result.attempts)}`);
      }
    }
    out('\n=== the buyer’s reputation view, derived from the receipts and acceptances it holds ===');
    const rep = (await apiCall(api.api, api.token, 'GET', '/v1/reputation')) as { providers: Array<{ did: string; score: number; jobs: number; successes: number; failures: number; disputes: number; accuracy: number }> };
    const w = Math.max(9, ...rep.providers.map((r) => names(r.did).length));
    out(`${'provider'.padEnd(w)}  score  jobs  ok  failed  disputed  accuracy`);
    for (const r of rep.providers) out(`${names(r.did).padEnd(w)}  ${r.score.toFixed(3)}  ${String(r.jobs).padEnd(4)}  ${String(r.successes).padEnd(2)}  ${String(r.failures).padEnd(6)}  ${String(r.disputes).padEnd(8)}  ${r.accuracy.toFixed(3)}`);
    out(`(providers without receipts score 0.5: unknown is not bad${net.reused ? "; the buyer's receipts from earlier runs on this --dir count too" : ''})`);
    if (o.keep) {
      await keepRunning(net, [`Watch it in the buyer's web console: ${await consoleLoginUrl(api.api, api.token)}`], [`${cli(net, 'buyer')} market`, `${cli(net, 'buyer')} reputation`]);
    }
  });
}

async function overlayScenario(o: { keep?: boolean; dir?: string }, startTimeoutMs: number): Promise<void> {
  const net = new Devnet({ providers: 0, policy: 'balanced', jobs: 0, keep: !!o.keep, ...(o.dir ? { dir: o.dir } : {}), bin: BIN, startTimeoutMs });
  await withDevnet(net, async () => {
    const names = () => net.names();
    const render = (label: string, ev: WireEvent) => renderEvent(ev, names(), (s) => out(net.named(`[${label}] ${s.trimStart()}`)));
    const r = await runOverlayScenario(net, render, out);
    out(`\n=== outcomes: ${Object.entries(r.outcomes).map(([k, v]) => `${k} ${v}`).join(', ')} ===`);
    const s = r.steward as {
      ledger: { length: number; head: string };
      attestation: { grade: string; witnesses: Array<{ witness: string; length: number }> };
      teams: Array<{ id: string; guarantee_uj: number; spent_uj: number; reserved_uj: number; borrowed_uj: number; held_devices: number }>;
      queued: unknown[];
    };
    out('\n=== the steward’s status ===');
    out('team     guarantee   spent       reserved    borrowed    held devices');
    for (const t of s.teams) out(`${t.id.padEnd(8)} ${(t.guarantee_uj / 1e6).toFixed(1).padStart(7)} J ${(t.spent_uj / 1e6).toFixed(1).padStart(9)} J ${(t.reserved_uj / 1e6).toFixed(1).padStart(9)} J ${(t.borrowed_uj / 1e6).toFixed(1).padStart(9)} J  ${t.held_devices}`);
    out(`queued claims: ${s.queued.length}`);
    out('\n=== the ledger ===');
    out(`length ${s.ledger.length}, head ${s.ledger.head}`);
    out(`attestation: ${s.attestation.grade}${s.attestation.witnesses.map((w) => ` by ${names()(w.witness)} to length ${w.length}`).join(',')}`);
    if (o.keep) {
      const steward = net.nodes.find((n) => n.role === 'steward');
      const a = steward && (await net.apiOf(steward));
      await keepRunning(net, a ? [`Watch the steward in its web console: ${await consoleLoginUrl(a.api, a.token)}`] : [], [`${cli(net, 'steward')} steward status`, `${cli(net, 'alpha')} market`]);
    }
  });
}

async function ordersScenario(o: { keep?: boolean; dir?: string }, startTimeoutMs: number): Promise<void> {
  const net = new Devnet({ providers: 0, policy: 'cheapest', jobs: 0, keep: !!o.keep, ...(o.dir ? { dir: o.dir } : {}), bin: BIN, startTimeoutMs });
  await withDevnet(net, async () => {
    const render = (label: string, ev: WireEvent) => renderEvent(ev, net.names(), (s) => out(net.named(`[${label}] ${s.trimStart()}`)));
    const r = await runOrdersScenario(net, render, out);
    if (o.keep) {
      // the scenario's own batch, as the file it wrote (batch-out holds its summary: a run again takes another directory)
      await keepRunning(net, [], [`${cli(net, 'buyer')} market`, `${cli(net, 'buyer')} batch plan ${r.batchFile}`, `${cli(net, 'buyer')} batch run ${r.batchFile} --output-dir ${join(net.dir, 'batch-out-2')}`]);
    }
  });
}

async function poolScenario(o: { keep?: boolean; dir?: string }, startTimeoutMs: number): Promise<void> {
  const net = new Devnet({ providers: 0, policy: 'cheapest', jobs: 0, keep: !!o.keep, ...(o.dir ? { dir: o.dir } : {}), bin: BIN, startTimeoutMs });
  await withDevnet(net, async () => {
    const render = (label: string, ev: WireEvent) => renderEvent(ev, net.names(), (s) => out(net.named(`[${label}] ${s.trimStart()}`)));
    const r = await runPoolScenario(net, render, out);
    out(`\n=== outcomes: ${r.outcomes.join(', ')} ===`);
    if (o.keep) {
      const member = r.live[0]!;
      await keepRunning(
        net,
        [`(${r.killed ?? 'the coordinator'}, killed mid-job 5, stays down; ${r.live.join(' and ')} and the rest run on)`],
        [`${cli(net, member)} pool-provider status`, `${cli(net, 'buyer')} market`, `${cli(net, 'buyer')} jobs`],
      );
    }
  });
}

/** `node bin/c0mpute.js --data-dir <dir>/<node>`: the start of a command to try against a kept node. */
function cli(net: Devnet, node: string): string {
  return `node bin/c0mpute.js --data-dir ${join(net.dir, node)}`;
}

/**
 * A kept network (`--keep`), the same for every scenario: where it runs, `notes` (a console URL, …), commands to try,
 * and what Ctrl-C does; then it runs until a stop signal ends it (withDevnet says what became of the directory).
 */
async function keepRunning(net: Devnet, notes: string[], tries: string[]): Promise<never> {
  out(`\nthe network keeps running in ${net.dir}.`);
  for (const n of notes) out(n);
  out('Try:');
  for (const t of tries) out(`  ${t}`);
  out(`Ctrl-C stops every node; ${net.dir} stays until you remove it.`);
  return new Promise<never>(() => {});
}

async function trainingScenario(o: { dir?: string }): Promise<void> {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'c0mpute-devnet-training-'));
  // Ctrl-C (or SIGTERM, SIGHUP) stops the workers and removes the directory, as the other scenarios do; a failed run
  // keeps it, with each worker's output (worker<N>/worker.log), and names it
  const stop = new AbortController();
  let signalled: RunStopSignal | undefined;
  const onSignal = (sig: RunStopSignal) => {
    signalled = sig;
    stop.abort();
  };
  for (const sig of RUN_STOP_SIGNALS) process.once(sig, onSignal);
  let how: 'done' | 'failed' | 'interrupted' = 'failed';
  try {
    out(`c0mpute devnet --training: three training workers, then two pipeline stages, on 127.0.0.1, in ${dir}`);
    const ok = await runTrainingScenario(BIN, dir, out, stop.signal);
    if (!ok) throw new C0Error('DEVNET_TRAINING_FAILED', 'the training scenario did not reach identical weights and pipeline output');
    how = 'done';
  } catch (e) {
    if (!stop.signal.aborted) throw e;
    how = 'interrupted';
  } finally {
    for (const sig of RUN_STOP_SIGNALS) process.removeListener(sig, onSignal);
    if (how === 'interrupted') out('▸ interrupted: every worker stopped');
    let fate: DirFate = 'given';
    if (!o.dir && how === 'failed') fate = 'kept-failed';
    else if (!o.dir) {
      rmSync(dir, { recursive: true, force: true });
      fate = 'removed';
    }
    out(`▸ ${dirFateLine(fate, dir, 'worker<N>/worker.log')}`);
  }
  if (how === 'interrupted') process.exit(RUN_SIGNAL_EXIT[signalled ?? 'SIGINT']);
}

/**
 * Run a devnet scenario; whatever happens (Ctrl-C, SIGTERM or SIGHUP included), stop every node it started. The end
 * is one routine (`finish`), whoever reaches it first: the scenario done, the scenario failed, or a signal. A signal
 * usually breaks the scenario off too (its nodes stop, its run is interrupted), and its failure reaches `finish` while
 * the signal's stop is under way: it joins that stop instead of starting its own, so the directory's fate is decided
 * once (Devnet.stop) and the line that names it is the truth. A signal removes a temporary directory, as the run's
 * normal end does (README "Set up"), unless `--keep` was given. The signals are a run's command's (RUN_STOP_SIGNALS:
 * Ctrl-C, and a service manager's or terminal's stop; before, only SIGINT was heard, and a SIGTERM ended the devnet
 * leaving every node running, orphaned to PID 1: review s40), with their exits (RUN_SIGNAL_EXIT).
 */
async function withDevnet(net: Devnet, scenario: () => Promise<void>): Promise<void> {
  let signalled: RunStopSignal | undefined;
  let finishing: Promise<void> | undefined;
  const finish = (how: 'done' | 'failed' | 'interrupted'): Promise<void> =>
    (finishing ??= (async () => {
      // said only when a node was started: a scenario refused before any (DEVNET_STATE_INVALID) stopped nothing, and
      // its temporary directory holds no log: it is removed
      const started = net.nodes.length > 0;
      if (started) out(how === 'interrupted' ? `\n▸ interrupted (${signalled}): stopping every node…` : '\n▸ stopping every node…');
      // a failed run keeps its directory (a temporary one too): the nodes' logs say why
      const fate = await net.stop({ failed: how === 'failed' && started });
      if (started || fate === 'kept-failed') out(`▸ ${how === 'interrupted' ? 'every node stopped; ' : 'done; '}${dirFateLine(fate, net.dir)}`);
    })());
  const onSignal = (sig: RunStopSignal) => {
    signalled = sig;
    void finish('interrupted').then(() => process.exit(RUN_SIGNAL_EXIT[sig]));
  };
  for (const sig of RUN_STOP_SIGNALS) process.once(sig, onSignal);
  let failed = true;
  try {
    await scenario();
    failed = false;
  } catch (e) {
    // broken off by the signal: not a failure of its own; the signal's ending says what happened
    if (signalled) {
      await finish('interrupted');
      process.exit(RUN_SIGNAL_EXIT[signalled]);
    }
    throw e;
  } finally {
    await finish(signalled ? 'interrupted' : failed ? 'failed' : 'done');
    for (const sig of RUN_STOP_SIGNALS) process.removeListener(sig, onSignal);
  }
}
