/**
 * `npm run soak -- [--minutes 30] [--providers 4] [--buyers 2] [--jobEveryMs 2000]
 *   [--churnEveryMin 3] [--sampleMs 10000] [--warmupMin 3] [--maxEvidence N] [--keepDays D]
 *   [--dir DIR] [--out soak.json]`
 *
 * The second day of a small network (docs/scale.md §6): separate daemons, each
 * started by `c0mpute start` from its own data directory and config.yaml as the
 * README says, run jobs for as long as asked while providers are SIGKILLed and
 * restarted on their old data and buyers are stopped with SIGTERM and started
 * again. Every `--sampleMs` it reads each daemon's /metrics and /proc entry;
 * at the end it prints, per 5-minute window, the jobs and how they ended, and
 * per daemon what grew: heap (the lowest sample of each minute, so a GC's
 * timing does not count), RSS, open file descriptors, active handles, the data
 * directory and the log. A store that is bounded grows and then levels off:
 * each slope is also given over the last third of the window ("late"), and
 * `--maxEvidence` / `--keepDays` set every daemon's evidence and history
 * bounds low, so a run of an hour or two reaches them.
 *
 * Two daemons are never restarted (the first provider, which every other node
 * bootstraps from, and the first buyer), so their figures cover the whole run;
 * the others are churned in turn. Nothing here asserts a figure: what an
 * operator would call a leak is for the reader of the report.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Devnet, freePort, waitFor, type NodeProc } from '../../src/devnet/devnet.js';
import { TOKEN_FILE } from '../../src/node/api.js';
import { DAEMON_FILE } from '../../src/node/daemon-info.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';

const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..', 'bin', 'c0mpute.js');

export interface SoakOptions {
  minutes: number;
  providers: number;
  buyers: number;
  jobEveryMs: number;
  churnEveryMin: number;
  sampleMs: number;
  warmupMin: number;
  /** Every daemon's `reputation.maxEvidence` (default: the daemon's), so a run reaches the bound sooner. */
  maxEvidence?: number;
  /** Every daemon's `history.keepDays` (default: the daemon's), so a run reaches the history's bound sooner. */
  keepDays?: number;
  dir?: string;
  out?: string;
}

const DEFAULTS: SoakOptions = { minutes: 30, providers: 4, buyers: 2, jobEveryMs: 2000, churnEveryMin: 3, sampleMs: 10_000, warmupMin: 3 };

interface Sample {
  t: number; // ms since the start of the run
  incarnation: number;
  rss: number;
  /** What the RSS is made of (/proc/<pid>/status): anonymous memory (heap, malloc) and mapped files (the binary, LevelDB's tables). */
  rssAnon: number;
  rssFile: number;
  heap: number;
  /** V8's heap as reserved (used + free pages) and memory outside it that V8 accounts for (Buffers, ArrayBuffers). */
  heapTotal: number;
  external: number;
  lagP99: number;
  cpu: number; // process CPU seconds, cumulative for this incarnation
  fds: number;
  handles: number;
  dirBytes: number;
  logBytes: number;
  peers?: number;
  evidence?: number;
  offersHeld?: number;
}

interface JobEnd {
  t: number;
  buyer: string;
  ms: number;
  status: string; // completed | failed | no-offers … or api:<code>
  expectFail: boolean;
}

interface Tracked {
  node: NodeProc;
  churned: boolean;
  incarnation: number;
  api?: { api: string; token: string };
  samples: Sample[];
  restarts: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Bytes under a data directory, but the log (reported on its own). */
function dirBytes(p: string): number {
  let n = 0;
  for (const e of readdirSync(p, { withFileTypes: true })) {
    if (e.name === 'node.log') continue;
    const q = join(p, e.name);
    try {
      n += e.isDirectory() ? dirBytes(q) : statSync(q).size;
    } catch {
      // a file LevelDB removed while we walked
    }
  }
  return n;
}

function metric(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** RssAnon and RssFile of /proc/<pid>/status, in bytes. */
function rssParts(pid: number | undefined): { rssAnon: number; rssFile: number } {
  const kib = (text: string, key: string) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : NaN;
  };
  if (!pid) return { rssAnon: NaN, rssFile: NaN };
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    return { rssAnon: kib(text, 'RssAnon'), rssFile: kib(text, 'RssFile') };
  } catch {
    return { rssAnon: NaN, rssFile: NaN };
  }
}

function fdCount(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/** The control API of the daemon whose process is `pid`, once it has written daemon.json. */
function apiOfDir(dir: string, pid: number | undefined): { api: string; token: string } | undefined {
  const f = join(dir, DAEMON_FILE);
  if (!existsSync(f)) return undefined;
  const info = JSON.parse(readFileSync(f, 'utf8')) as { api?: string; pid?: number };
  if (!info.api || info.pid !== pid) return undefined;
  return { api: info.api, token: readFileSync(join(dir, TOKEN_FILE), 'utf8').trim() };
}

export async function runSoak(partial: Partial<SoakOptions> = {}, print: (s: string) => void = (s) => process.stdout.write(s + '\n')): Promise<Record<string, unknown>> {
  const o: SoakOptions = { ...DEFAULTS, ...partial };
  const configOverrides = { ...(o.maxEvidence !== undefined ? { reputation: { maxEvidence: o.maxEvidence } } : {}), ...(o.keepDays !== undefined ? { history: { keepDays: o.keepDays } } : {}) };
  const net = new Devnet({ providers: o.providers, policy: 'balanced', jobs: 1, keep: !!o.dir, ...(o.dir ? { dir: o.dir } : {}), bin: BIN, print, configOverrides });
  const t0 = Date.now();
  const now = () => Date.now() - t0;
  const tracked: Tracked[] = [];
  const jobs: JobEnd[] = [];
  const events: { t: number; what: string }[] = [];
  let stopping = false;
  try {
    const { buyer } = await net.start();
    // More buyers, configured as the first one.
    const provider0 = net.nodes[0]!;
    const bootstrap = `/ip4/127.0.0.1/tcp/${provider0.port}/p2p/${peerIdFromDid(provider0.did).toString()}`;
    for (let b = 1; b < o.buyers; b++) {
      const port = await freePort();
      net.spawn(`buyer${b + 1}`, 'buyer', {
        roles: ['buyer'],
        log: { level: 'info', format: 'json' },
        network: { listen: [`/ip4/127.0.0.1/tcp/${port}`], loopback: true, bootstrap: [bootstrap] },
        api: { listen: '127.0.0.1:0' },
        buyer: { policy: 'balanced', collectWindowMs: 2500, enoughOffers: o.providers },
      }, port);
    }
    for (const n of net.nodes) tracked.push({ node: n, churned: n !== provider0 && n !== buyer, incarnation: 0, samples: [], restarts: 0 });
    for (const t of tracked) t.api = await net.apiOf(t.node);
    // every buyer sees the market before the first job
    for (const t of tracked.filter((x) => x.node.role === 'buyer')) {
      await net.waitForMarket(t.node.name, t.api!, o.providers);
    }
    print(`soak: ${o.providers} providers, ${o.buyers} buyers for ${o.minutes} min in ${net.dir}; a job every ${o.jobEveryMs} ms per buyer; one daemon restarted every ${o.churnEveryMin} min (never ${provider0.name} or ${buyer.name})`);

    const end = t0 + o.minutes * 60_000;
    const alive = (t: Tracked) => t.node.child.exitCode === null && t.node.child.signalCode === null;

    // The sampler.
    const sampler = (async () => {
      while (!stopping) {
        await Promise.all(tracked.map(async (t) => {
          if (!alive(t) || !t.api) return;
          try {
            const res = await fetch(`http://${t.api.api}/metrics`, { signal: AbortSignal.timeout(5000) });
            const text = await res.text();
            const st = (await (await fetch(`http://${t.api.api}/v1/status`, { headers: { authorization: `Bearer ${t.api.token}` }, signal: AbortSignal.timeout(5000) })).json()) as { peers?: number; evidence?: number; offersHeld?: number };
            t.samples.push({
              t: now(),
              incarnation: t.incarnation,
              rss: metric(text, 'c0mpute_process_resident_memory_bytes') ?? NaN,
              ...rssParts(t.node.child.pid),
              heap: metric(text, 'c0mpute_nodejs_heap_size_used_bytes') ?? NaN,
              heapTotal: metric(text, 'c0mpute_nodejs_heap_size_total_bytes') ?? NaN,
              external: metric(text, 'c0mpute_nodejs_external_memory_bytes') ?? NaN,
              lagP99: metric(text, 'c0mpute_nodejs_eventloop_lag_p99_seconds') ?? NaN,
              cpu: metric(text, 'c0mpute_process_cpu_seconds_total') ?? NaN,
              fds: fdCount(t.node.child.pid),
              handles: metric(text, 'c0mpute_nodejs_active_handles_total') ?? NaN,
              dirBytes: dirBytes(t.node.dir),
              logBytes: statSync(t.node.log).size,
              ...(st.peers !== undefined ? { peers: st.peers } : {}),
              ...(st.evidence !== undefined ? { evidence: st.evidence } : {}),
              ...(st.offersHeld !== undefined ? { offersHeld: st.offersHeld } : {}),
            });
          } catch {
            // restarting, or too busy to answer in 5 s: no sample
          }
        }));
        await sleep(o.sampleMs);
      }
    })();

    // The buyers' jobs.
    const buyers = tracked.filter((t) => t.node.role === 'buyer');
    const policies = ['balanced', 'cheapest', 'fastest', 'trusted'];
    let seq = 0;
    const jobLoops = buyers.map(async (b, bi) => {
      await sleep(bi * Math.floor(o.jobEveryMs / Math.max(1, buyers.length)));
      while (Date.now() < end) {
        if (!alive(b) || !b.api) {
          // this buyer is being restarted: no job, and none counted
          await sleep(500);
          continue;
        }
        const i = seq++;
        // One job in ten asks for what no provider has: the failure path, every time.
        const expectFail = i % 10 === 9;
        const started = Date.now();
        let status: string;
        try {
          const result = await net.runJob(b.api, {
            workload: i % 3 === 0 ? 'builtin.primes' : 'builtin.sha256',
            params: '20000',
            maxPrice: { amount: '0.01', currency: 'USD' },
            deadlineMs: 30_000,
            requirements: expectFail ? { memoryMiB: 16 * 1024 * 1024 } : {},
            policy: policies[i % policies.length],
            input: Buffer.from(`soak job ${i}`).toString('base64'),
          }, () => {});
          status = String(result.status);
        } catch (e) {
          status = `api:${(e as { code?: string }).code ?? (e as Error).message}`;
        }
        jobs.push({ t: started - t0, buyer: b.node.name, ms: Date.now() - started, status, expectFail });
        const wait = o.jobEveryMs - (Date.now() - started);
        await sleep(Math.max(status.startsWith('api:') ? 1000 : 0, wait));
      }
    });

    // The churn: SIGKILL a provider (or SIGTERM a buyer) and start it again on its data.
    const churnable = tracked.filter((t) => t.churned);
    let next = 0;
    const churn = (async () => {
      if (!churnable.length) return;
      while (Date.now() + o.churnEveryMin * 60_000 < end) {
        await sleep(o.churnEveryMin * 60_000);
        const t = churnable[next++ % churnable.length]!;
        const signal = t.node.role === 'buyer' ? 'SIGTERM' : 'SIGKILL';
        events.push({ t: now(), what: `${signal} ${t.node.name}` });
        const exited = new Promise((r) => t.node.child.once('exit', r));
        t.node.child.kill(signal);
        await Promise.race([exited, sleep(15_000)]);
        if (alive(t)) t.node.child.kill('SIGKILL');
        await sleep(5000);
        // daemon.json is left as the killed process wrote it, as after a crash.
        const cfgPath = join(t.node.dir, 'config.yaml');
        const out = openSync(t.node.log, 'a');
        t.node.child = spawn(process.execPath, [BIN, '--data-dir', t.node.dir, 'start', '--config', cfgPath], { stdio: ['ignore', out, out], env: { ...process.env, C0MPUTE_PASSPHRASE: '' } });
        closeSync(out); // the child has its own copy
        t.incarnation++;
        t.restarts++;
        t.api = undefined;
        try {
          t.api = await waitFor(`${t.node.name} to start again`, 60_000, () => apiOfDir(t.node.dir, t.node.child.pid));
          events.push({ t: now(), what: `${t.node.name} back` });
        } catch (e) {
          events.push({ t: now(), what: `${t.node.name} did not come back: ${(e as Error).message}` });
        }
      }
    })();

    let lastReport = Date.now();
    while (Date.now() < end) {
      await sleep(5000);
      if (Date.now() - lastReport >= 5 * 60_000) {
        lastReport = Date.now();
        const w = jobs.filter((j) => j.t >= now() - 5 * 60_000);
        print(`  ${Math.round(now() / 60_000)} min: ${w.length} jobs in the last 5 min, ${w.filter((j) => j.status === 'completed').length} completed; load ${loadavg()[0]!.toFixed(2)}`);
      }
    }
    await Promise.all(jobLoops);
    await churn;
    stopping = true;
    await sampler;
    const report = summarise(o, tracked, jobs, events);
    print(render(report));
    if (o.out) writeFileSync(o.out, JSON.stringify({ options: o, report, jobs, events, samples: Object.fromEntries(tracked.map((t) => [t.node.name, t.samples])) }, null, 1));
    return report;
  } finally {
    stopping = true;
    await net.stop();
  }
}

/** Least-squares slope of y over x, per hour (x in ms). */
function slopePerHour(pts: { x: number; y: number }[]): number {
  if (pts.length < 3) return NaN;
  const n = pts.length;
  const mx = pts.reduce((a, p) => a + p.x, 0) / n;
  const my = pts.reduce((a, p) => a + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of pts) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den ? (num / den) * 3_600_000 : NaN;
}

function quantile(xs: number[], q: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

function summarise(o: SoakOptions, tracked: Tracked[], jobs: JobEnd[], events: { t: number; what: string }[]): Record<string, unknown> {
  const windows: Record<string, unknown>[] = [];
  const win = 5 * 60_000;
  for (let w0 = 0; w0 < o.minutes * 60_000; w0 += win) {
    const js = jobs.filter((j) => j.t >= w0 && j.t < w0 + win);
    const byStatus: Record<string, number> = {};
    for (const j of js) {
      const k = `${j.expectFail ? 'unmeetable ' : ''}${j.status}`;
      byStatus[k] = (byStatus[k] ?? 0) + 1;
    }
    const ok = js.filter((j) => j.status === 'completed').map((j) => j.ms);
    windows.push({ from: w0 / 60_000, jobs: js.length, byStatus, completedP50Ms: quantile(ok, 0.5), completedP95Ms: quantile(ok, 0.95) });
  }
  const warm = o.warmupMin * 60_000;
  const nodes = tracked.map((t) => {
    const s = t.samples;
    // The incarnation that ran longest after the warm-up: the whole run for a daemon never restarted.
    const byInc = new Map<number, Sample[]>();
    for (const x of s) byInc.set(x.incarnation, [...(byInc.get(x.incarnation) ?? []), x]);
    const inc = [...byInc.values()].map((xs) => xs.filter((x) => x.t >= warm && x.t - xs[0]!.t >= 60_000)).sort((a, b) => b.length - a.length)[0] ?? [];
    const perMinMin = new Map<number, number>();
    for (const x of inc) {
      const m = Math.floor(x.t / 60_000);
      perMinMin.set(m, Math.min(perMinMin.get(m) ?? Infinity, x.heap));
    }
    const heapPts = [...perMinMin].map(([m, y]) => ({ x: m * 60_000, y }));
    const first = inc[0];
    const last = inc[inc.length - 1];
    // the last third of the window: what a bounded store's growth levels off to
    const lateFrom = first && last ? last.t - (last.t - first.t) / 3 : Infinity;
    const late = <P extends { x: number }>(pts: P[]) => pts.filter((p) => p.x >= lateFrom);
    const span = first && last ? (last.t - first.t) / 1000 : 0;
    return {
      name: t.node.name,
      role: t.node.role,
      restarts: t.restarts,
      window: first && last ? `${(first.t / 60_000).toFixed(1)}–${(last.t / 60_000).toFixed(1)} min` : 'none',
      heapMiB: first && last ? [first.heap / 2 ** 20, last.heap / 2 ** 20] : [],
      heapFloorSlopeMiBPerHour: slopePerHour(heapPts) / 2 ** 20,
      heapFloorSlopeLateMiBPerHour: slopePerHour(late(heapPts)) / 2 ** 20,
      rssMiB: first && last ? [first.rss / 2 ** 20, last.rss / 2 ** 20] : [],
      rssSlopeMiBPerHour: slopePerHour(inc.map((x) => ({ x: x.t, y: x.rss }))) / 2 ** 20,
      // where the RSS went, first → last sample of the window
      memoryMiB: first && last
        ? Object.fromEntries((['heapTotal', 'external', 'rssAnon', 'rssFile'] as const).map((k) => [k, [first[k] / 2 ** 20, last[k] / 2 ** 20]]))
        : {},
      fds: first && last ? [first.fds, last.fds] : [],
      handles: first && last ? [first.handles, last.handles] : [],
      peers: first && last ? [first.peers, last.peers] : [],
      evidence: first && last ? [first.evidence, last.evidence] : [],
      dirMiB: last ? last.dirBytes / 2 ** 20 : NaN,
      dirSlopeMiBPerHour: slopePerHour(inc.map((x) => ({ x: x.t, y: x.dirBytes }))) / 2 ** 20,
      dirSlopeLateMiBPerHour: slopePerHour(late(inc.map((x) => ({ x: x.t, y: x.dirBytes })))) / 2 ** 20,
      logMiBPerHour: slopePerHour(inc.map((x) => ({ x: x.t, y: x.logBytes }))) / 2 ** 20,
      cpuPct: first && last && span ? ((last.cpu - first.cpu) / span) * 100 : NaN,
      lagP99MsMax: Math.max(...inc.map((x) => x.lagP99 * 1000)),
    };
  });
  return { windows, nodes, events, totals: { jobs: jobs.length, completed: jobs.filter((j) => j.status === 'completed').length, unmeetable: jobs.filter((j) => j.expectFail).length, unmeetableCompleted: jobs.filter((j) => j.expectFail && j.status === 'completed').length } };
}

function render(r: Record<string, unknown>): string {
  const f = (x: unknown, d = 1) => (typeof x === 'number' ? (Number.isFinite(x) ? x.toFixed(d) : '–') : String(x));
  const lines: string[] = ['', 'jobs, per 5 minutes:'];
  for (const w of r.windows as { from: number; jobs: number; byStatus: Record<string, number>; completedP50Ms: number; completedP95Ms: number }[]) {
    lines.push(`  ${String(w.from).padStart(3)} min: ${String(w.jobs).padStart(4)} jobs; ${Object.entries(w.byStatus).map(([k, v]) => `${k} ${v}`).join(', ')}; completed p50 ${f(w.completedP50Ms, 0)} ms, p95 ${f(w.completedP95Ms, 0)} ms`);
  }
  lines.push('', 'daemons (the longest-lived incarnation after the warm-up; heap floor = lowest sample of each minute):');
  lines.push('  name       role      restarts window          heap MiB      floor MiB/h (late)  RSS MiB        RSS MiB/h  fds      handles  peers   evidence     data MiB (MiB/h, late)  log MiB/h  CPU %  lag p99 max ms');
  for (const n of r.nodes as Record<string, unknown>[]) {
    const pair = (v: unknown, d = 1) => (Array.isArray(v) && v.length ? `${f(v[0], d)}→${f(v[1], d)}` : '–');
    lines.push(
      `  ${String(n.name).padEnd(10)} ${String(n.role).padEnd(9)} ${String(n.restarts).padStart(8)} ${String(n.window).padEnd(15)} ${pair(n.heapMiB).padEnd(13)} ${`${f(n.heapFloorSlopeMiBPerHour, 2)} (${f(n.heapFloorSlopeLateMiBPerHour, 2)})`.padStart(18)}  ${pair(n.rssMiB).padEnd(14)} ${f(n.rssSlopeMiBPerHour, 1).padStart(9)}  ${pair(n.fds, 0).padEnd(8)} ${pair(n.handles, 0).padEnd(8)} ${pair(n.peers, 0).padEnd(7)} ${pair(n.evidence, 0).padEnd(12)} ${f(n.dirMiB, 2)} (${f(n.dirSlopeMiBPerHour, 2)}, ${f(n.dirSlopeLateMiBPerHour, 2)})`.padEnd(200).trimEnd() +
        `  ${f(n.logMiBPerHour, 2)}  ${f(n.cpuPct, 2)}  ${f(n.lagP99MsMax, 0)}`,
    );
  }
  lines.push('', 'memory, first → last sample of the same window (MiB): V8 heap reserved, outside the heap (Buffers), RSS anonymous, RSS of mapped files:');
  for (const n of r.nodes as Record<string, unknown>[]) {
    const m = n.memoryMiB as Record<string, number[]>;
    const pair = (v: number[] | undefined) => (v && v.length ? `${f(v[0])}→${f(v[1])}` : '–');
    lines.push(`  ${String(n.name).padEnd(10)} heap total ${pair(m.heapTotal).padEnd(13)} external ${pair(m.external).padEnd(13)} anon ${pair(m.rssAnon).padEnd(13)} file ${pair(m.rssFile)}`);
  }
  lines.push('', 'events:');
  for (const e of r.events as { t: number; what: string }[]) lines.push(`  ${(e.t / 60_000).toFixed(1)} min  ${e.what}`);
  const t = r.totals as Record<string, number>;
  lines.push('', `${t.jobs} jobs, ${t.completed} completed; ${t.unmeetable} asked for what no provider has, ${t.unmeetableCompleted} of them completed (should be 0)`);
  return lines.join('\n');
}

function parseArgs(argv: string[]): Partial<SoakOptions> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new Error(`unexpected argument "${a}"`);
    const k = a.slice(2);
    const v = argv[++i];
    if (v === undefined) throw new Error(`--${k} wants a value`);
    if (k === 'dir' || k === 'out') o[k] = v;
    else if (k in DEFAULTS || k === 'maxEvidence' || k === 'keepDays') {
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0) throw new Error(`--${k} must be a positive number, got "${v}"`);
      if (k === 'maxEvidence' && (!Number.isInteger(n) || n < 1000)) throw new Error(`--maxEvidence must be a whole number of at least 1000 (the daemon's bound), got "${v}"`);
      o[k] = n;
    } else throw new Error(`unknown option --${k} (known: ${[...Object.keys(DEFAULTS), 'maxEvidence', 'keepDays', 'dir', 'out'].join(', ')})`);
  }
  return o as Partial<SoakOptions>;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(`usage: npm run soak -- [--name value …]\nknobs: ${[...Object.keys(DEFAULTS), 'maxEvidence', 'keepDays', 'dir', 'out'].map((k) => `--${k}`).join(' ')}`);
    process.exit(0);
  }
  let options: Partial<SoakOptions>;
  try {
    options = parseArgs(argv);
  } catch (e) {
    console.error(`soak: ${(e as Error).message}`);
    process.exit(2);
  }
  runSoak(options).then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
