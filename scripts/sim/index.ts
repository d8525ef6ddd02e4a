/**
 * `npm run sim -- [--nodes 100] [--duration 300] [--seed 1] [--procs 2] [--json] [--out figures.json] [--prof DIR]`
 * (issue #16; docs/scale.md "The hundred-node run"): a network of real nodes
 * spread over worker processes on this machine, a seeded schedule (providers
 * republishing adverts and presence, buyers publishing jobs and collecting
 * offers, witnesses relaying), 10 %/min churn and a one-minute partition that
 * heals; prints the figures. `runSim` serves the CI-sized test too.
 *
 * Other knobs (each `--name value`, defaults in plan.ts): --markets --resyncMs --presenceEveryMs --jobEveryMs
 * --partitionMs --partitionAtMs --churnPerMin --advertLifetimeMs --downMs --meshDegree (gossipsub's D, default 6).
 */
import { fork, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort } from '../../src/devnet/devnet.js';
import { analyse, type SimFigures } from './analyse.js';
import { makePlan, partitionWarning, simDefaults, type SimOptions } from './plan.js';
import type { WorkerResult } from './worker.js';

export async function runSim(partial: Partial<SimOptions> = {}, profDir?: string): Promise<{ figures: SimFigures; load: [number, number] }> {
  const opts = simDefaults(partial);
  const plan = makePlan(opts);
  const ports: number[] = [];
  while (ports.length < opts.nodes) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const procs = Math.max(1, Math.min(opts.procs, opts.nodes));
  const workerPath = fileURLToPath(new URL('./worker.js', import.meta.url));
  const children = Array.from({ length: procs }, () => fork(workerPath, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' }));
  const load0 = loadavg()[0]!;
  try {
    const next = (c: (typeof children)[number], type: string) =>
      new Promise<unknown>((resolve, reject) => {
        const onMsg = (m: { type?: string; result?: unknown }) => {
          if (m?.type === type) {
            c.off('message', onMsg);
            c.off('exit', onExit);
            resolve(m.result);
          }
        };
        const onExit = (code: number | null) => reject(new Error(`sim worker exited (${code}) before '${type}'`));
        c.on('message', onMsg);
        c.once('exit', onExit);
      });
    const ready = children.map((c) => next(c, 'ready'));
    children.forEach((c, k) => c.send({ opts, shard: plan.nodes.filter((n) => n.index % procs === k).map((n) => n.index), ports, ...(profDir ? { profDir } : {}) }));
    await Promise.all(ready);
    const results = children.map((c) => next(c, 'result'));
    const t0 = Date.now() + opts.warmupMs;
    for (const c of children) c.send({ t0 });
    const out = (await Promise.all(results)) as WorkerResult[];
    // SIM_DIAG=1: what closed connections (worker.ts tallyCloses), to stderr
    if (process.env.SIM_DIAG) {
      const d: Record<string, number> = {};
      for (const r of out) for (const [k, v] of Object.entries(r.closes)) d[k] = (d[k] ?? 0) + v;
      for (const [k, v] of Object.entries(d).sort((a, b) => b[1] - a[1]).slice(0, 30)) console.error(v, k);
    }
    return { figures: analyse(plan, out), load: [load0, loadavg()[0]!] };
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
  }
}

/**
 * The partition's line and the end's: after a heal, whether the buyers' views agreed again; a partition that held to
 * the end of the schedule is said to have, and its missing adverts are not read as a failure to converge.
 */
export function partitionLines(f: Pick<SimFigures, 'heal' | 'durationMs' | 'missingAtEnd' | 'nodesMissingAtEnd'>): string[] {
  const L: string[] = [];
  const h = f.heal;
  if (h?.healed === false) {
    L.push(`partition: from ${h.atMs / 1000} s to the end of the ${f.durationMs / 1000} s schedule (its heal, at ${h.untilMs / 1000} s, is past the end): no heal in this run, so no agreement after one to time; ${h.leaked} of ${h.crossing} (advert, node) pairs across the cut delivered while it held`);
  } else if (h) {
    L.push(`partition: ${h.leaked} of ${h.crossing} (advert, node) pairs across the cut delivered before the heal; every buyer's view agreed ${h.agreementAfterMs === null ? 'never' : `${h.agreementAfterMs} ms`} after the heal (views sampled every 2 s)`);
  }
  L.push(`at the end: ${f.missingAtEnd} (node, provider) pairs without the provider's latest advert, on ${f.nodesMissingAtEnd} nodes${h?.healed === false && f.missingAtEnd > 0 ? ' (the partition still held: a node cannot hold what the cut keeps from it)' : ''}`);
  return L;
}

/** A time in ms: "never" when some sample never got there (Infinity), "n/a" when there was nothing to time (a run too short to republish). */
const f1 = (x: number | null) => (x === null || Number.isNaN(x) ? 'n/a' : Number.isFinite(x) ? x.toFixed(0) : 'never');
const kb = (x: number) => (x / 1000).toFixed(2);

export function formatFigures(f: SimFigures, load: [number, number]): string {
  const L: string[] = [];
  L.push(`${f.nodes} nodes, ${f.durationMs / 1000} s schedule; load average ${load[0].toFixed(2)} at start, ${load[1].toFixed(2)} at end (2 cores, shared)`);
  L.push(`advert reach (${f.reach.adverts} adverts, nodes up and connected to the publisher): 50 % median ${f1(f.reach.p50ms.median)} ms (p99 ${f1(f.reach.p50ms.p99)}); 99 % median ${f1(f.reach.p99ms.median)} ms (p99 ${f1(f.reach.p99ms.p99)}); 100 % median ${f1(f.reach.p100ms.median)} ms (p99 ${f1(f.reach.p100ms.p99)}, max ${f1(f.reach.p100ms.max)}); not at every node within 30 s: ${f.reach.incomplete}`);
  L.push(`jobs: ${f.offers.jobs} published, ${f.offers.decided} decided, ${f.offers.abandoned} abandoned (buyer left), ${f.offers.lost} with no offer although a matching provider was up; first offer after median ${f1(f.offers.firstOfferMs.median)} ms (p99 ${f1(f.offers.firstOfferMs.p99)}); ${f.offers.offersPerJob.toFixed(1)} offers per job, ${Number.isFinite(f.offers.completeness) ? (100 * f.offers.completeness).toFixed(1) : 'n/a'} % of the matching live providers' offers arrived; decided on a stale advert: ${f.offers.staleDecisions}; winner gone: ${f.offers.deadWinners}`);
  L.push(`published per second, network-wide: ${Object.entries(f.publishedPerSec).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
  L.push('gossip per node (mean over node-seconds up): kind  in msg/s  in kB/s  out kB/s');
  for (const t of f.traffic) L.push(`  ${t.kind.padEnd(10)} ${t.inMsgsPerSec.toFixed(2).padStart(8)} ${kb(t.inBytesPerSec).padStart(8)} ${kb(t.outBytesPerSec).padStart(9)}`);
  const tot = f.traffic.reduce((s, t) => ({ i: s.i + t.inBytesPerSec, o: s.o + t.outBytesPerSec }), { i: 0, o: 0 });
  L.push(`  ${'total'.padEnd(10)} ${''.padStart(8)} ${kb(tot.i).padStart(8)} ${kb(tot.o).padStart(9)}`);
  L.push(`  by role (in/out kB/s): ${f.trafficByRole.map((r) => `${r.role} ${kb(r.inBytesPerSec)}/${kb(r.outBytesPerSec)}`).join(', ')}`);
  L.push(`event-loop lag (worst worker) p50 ${f.loopLagMs[0].toFixed(0)} ms, p99 ${f.loopLagMs[1].toFixed(0)} ms, max ${f.loopLagMs[2].toFixed(0)} ms${f.loopLagMs[1] > 100 ? ' — STARVED: the workers did not get the CPU they needed; these figures are the machine\'s, not the protocol\'s' : ''}`);
  L.push(`CPU ${f.cpuPctPerNode.toFixed(2)} % of a core per node; RSS ${f.rssMiBPerNode.toFixed(1)} MiB per node (process RSS / nodes), peak ${f.peakRssMiB.toFixed(0)} MiB in all`);
  L.push(`connections: ${f.conns.perNode.toFixed(1)} per node (mean of samples every 2 s); ${f.conns.opensPerNodeMin.toFixed(1)} opened per node and minute (each counted at both ends), ${f.conns.identifiesPerNodeMin.toFixed(1)} identify exchanges per node and minute; closed ones lived ${Object.entries(f.conns.lifetimes).map(([k, v]) => `${k}: ${v}`).join(', ')}`);
  L.push(`syncs: ${f.syncs.perNodeMin.toFixed(1)} per node and minute, ${f.syncs.acceptedPerSync.toFixed(1)} new and ${f.syncs.otherPerSync.toFixed(1)} already-known records received per sync`);
  L.push(`offers per job (offerRank ${f.rank.offerRank}, offersWanted ${f.rank.offersWanted}): ${f.rank.outranked} gossiped jobs held back by a provider outranked on price; ${f.rank.pushes} pushes by buyers short of offers, ${f.rank.pushOffers} offers from them${Object.keys(f.rank.pushErrors).length ? ` (failed: ${Object.entries(f.rank.pushErrors).map(([k, v]) => `${v} ${k}`).join('; ')})` : ''}`);
  L.push(`jobs by invitation (inviteAbove ${f.rank.inviteAbove}): ${f.rank.invited} of ${f.offers.jobs} jobs sent directly to ${f.rank.invitations} providers (${f.rank.invitationOffers} offers from them), ${f.rank.gossipAfterInvite} of them gossiped after all, still short once every invitation answered or halfway through the window`);
  L.push(`offers sent direct: ${Object.entries(f.offerSends).map(([k, v]) => `${k} ${v.n} (mean ${v.meanMs.toFixed(0)} ms, ${(100 * v.lateShare).toFixed(0)} % after the decision window)`).join(', ')}`);
  const outcomeSends = Object.entries(f.outcomeSends ?? {});
  if (outcomeSends.length) L.push(`outcomes sent direct (outcome/1, one per provider concerned): ${outcomeSends.map(([k, n]) => `${k} ${n}`).join(', ')}`);
  L.push(`market view (fraction of live providers whose latest advert a buyer holds): mean ${f.view.mean.toFixed(4)}, min ${f.view.min.toFixed(3)} outside the partition${f.view.duringPartition !== undefined ? `, mean ${f.view.duringPartition.toFixed(4)} during it` : ''}; every buyer agreed in ${f.view.agreedRounds}/${f.view.rounds} sampling rounds`);
  L.push(...partitionLines(f));
  for (const d of f.missingDetail) L.push(`  node ${d.node} (half ${d.side}${d.rejoinedAt !== undefined ? `, rejoined at ${d.rejoinedAt} ms` : ''}) misses providers ${d.providers.join(', ')}`);
  if (f.errors.length) L.push(`errors (${f.errors.length}): ${[...new Set(f.errors)].slice(0, 5).join(' | ')}`);
  return L.join('\n');
}

const NUMERIC = ['nodes', 'duration', 'seed', 'procs', 'markets', 'resyncMs', 'presenceEveryMs', 'jobEveryMs', 'partitionMs', 'partitionAtMs', 'churnPerMin', 'advertLifetimeMs', 'downMs', 'meshDegree', 'offerRank', 'offersWanted', 'inviteAbove', 'outcomes'] as const;
const USAGE = `usage: npm run sim -- [--nodes 100] [--duration 300 (s)] [--seed 1] [--procs 2] [--json] [--out figures.json] [--prof DIR]
       npm run sim -- --scenarios   (the long end-to-end scenarios kept out of npm test: test/scenarios/)
other knobs, each --name value (defaults in scripts/sim/plan.ts): ${NUMERIC.slice(4).map((k) => `--${k}`).join(' ')}`;

/**
 * The command line, strictly: an unknown flag, a flag without its value or a value that is not a number stops the
 * run before any node starts (a typo must not cost a five-minute run on the defaults).
 */
export function parseSimArgs(argv: string[]): { help: true } | { help: false; options: Partial<SimOptions>; json: boolean; out?: string; prof?: string } {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' }, json: { type: 'boolean' }, out: { type: 'string' }, prof: { type: 'string' } };
  for (const k of NUMERIC) options[k] = { type: 'string' };
  let values: Record<string, string | boolean | undefined>;
  try {
    // `--partitionAtMs -1` (no partition) as well as `--partitionAtMs=-1`: parseArgs takes a value starting with a dash only after "="
    const args = argv.flatMap((a, i) => (/^-\d/.test(a) && /^--\w+$/.test(argv[i - 1] ?? '') ? [] : /^--\w+$/.test(a) && /^-\d/.test(argv[i + 1] ?? '') ? [`${a}=${argv[i + 1]}`] : [a]));
    ({ values } = parseArgs({ args, options, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${USAGE}`, { cause: e });
  }
  if (values.help) return { help: true };
  const o: Partial<SimOptions> = {};
  for (const k of NUMERIC) {
    const v = values[k];
    if (v === undefined) continue;
    const n = Number(v);
    if (typeof v !== 'string' || v.trim() === '' || !Number.isFinite(n)) throw new Error(`--${k} takes a number, got "${String(v)}"\n${USAGE}`);
    if ((k === 'nodes' || k === 'duration' || k === 'procs') && !(n > 0)) throw new Error(`--${k} must be above 0, got "${v}"`);
    if (k === 'duration') o.durationMs = n * 1000;
    else o[k] = n;
  }
  return { help: false, options: o, json: values.json === true, ...(typeof values.out === 'string' ? { out: values.out } : {}), ...(typeof values.prof === 'string' ? { prof: values.prof } : {}) };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && process.argv.slice(2).includes('--scenarios')) {
  // the long end-to-end scenarios (test/scenarios/), run as `npm test` runs its files (scripts/run-tests.mjs)
  const others = process.argv.slice(2).filter((a) => a !== '--scenarios');
  if (others.length) {
    console.error(`sim: --scenarios takes no other flag, got ${others.join(' ')}\n${USAGE}`);
    process.exit(2);
  }
  const runner = fileURLToPath(new URL('../../../scripts/run-tests.mjs', import.meta.url));
  process.exit(spawnSync(process.execPath, [runner, '--scenarios'], { stdio: 'inherit' }).status ?? 1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  let args: ReturnType<typeof parseSimArgs>;
  try {
    args = parseSimArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`sim: ${(e as Error).message}`);
    process.exit(2);
  }
  if (args.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const o = args.options;
  const warning = partitionWarning(simDefaults(o));
  if (warning) console.error(`sim: ${warning}`);
  const { figures, load } = await runSim(o, args.prof);
  console.log(args.json ? JSON.stringify(figures, null, 1) : formatFigures(figures, load));
  if (args.out) writeFileSync(args.out, JSON.stringify({ options: o, load, figures }, null, 1));
  process.exit(0);
}
