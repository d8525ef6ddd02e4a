/**
 * Node commands: `init`, `start`, `run`, `status`, `peers`, `offers`, `jobs`,
 * `reputation`, and the live `market` listing. Commands that ask a running
 * daemon talk to its control API (found through <data-dir>/daemon.json and the
 * token file); `run`, `jobs` and `reputation` work without one too.
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { requireDid } from '../../records/did.js';
import { createIdentity, keyFilePath } from '../../node/identity.js';
import { loadConfig, ROLE_NAMES, type NodeConfig } from '../../node/config.js';
import { readDaemonInfo } from '../../node/daemon-info.js';
import type { Daemon } from '../../node/daemon.js';
import { apiCall, apiStream, ensureToken } from '../../node/api.js';
import { eventToWire, resultToWire, type WireEvent } from '../../node/events.js';
import { parseJobSpec } from '../../node/control.js';
import { jobs as localJobs } from '../../node/control.js';
import { JOBS_PAGE_MAX } from '../../node/job-history.js';
import type { status as localStatus, market as localMarket } from '../../node/control.js';
import { peerIdFromDid } from '../../node/peer-id.js';
import { createLogger } from '../../util/log.js';
import { NegativeAnswer, jsonReplacer, out, outJson } from '../context.js';
import { passphraseFrom, warnUnencrypted } from '../passphrase.js';
import { loadNodeIdentity } from '../signer.js';
import { readJobFile } from '../jobfile.js';
import { consoleLoginUrl } from '../../node/console-routes.js';
import { renderEvent, renderExplanation, short, shortAddr } from '../render.js';
import { listLimit, num } from '../summary.js';
import { globals } from './index.js';
import { daemonClient, overlayQuery as q, requireDaemon } from '../daemon-client.js';
import { exitOnBug } from '../../node/fatal.js';

const here = dirname(fileURLToPath(import.meta.url));
/** config/default.yaml in the package (dist/src/cli/commands → ../../../../config). */
export const DEFAULT_CONFIG = join(here, '..', '..', '..', '..', 'config', 'default.yaml');

interface StartFlags {
  config?: string;
  role?: string[];
  listen?: string[];
  bootstrap?: string[];
  api?: string;
  logLevel?: string;
  logFormat?: string;
}


function collect(v: string, prev: string[] = []): string[] {
  return [...prev, ...v.split(',').map((s) => s.trim()).filter(Boolean)];
}

export function nodeConfig(dataDir: string, f: StartFlags): NodeConfig {
  const file = f.config ?? (existsSync(join(dataDir, 'config.yaml')) ? join(dataDir, 'config.yaml') : undefined);
  const flags: Record<string, unknown> = {};
  if (f.role?.length) {
    for (const r of f.role) if (!(ROLE_NAMES as readonly string[]).includes(r)) throw new C0Error('CONFIG_INVALID', `unknown role "${r}"; roles are ${ROLE_NAMES.join(', ')}`, { field: 'roles' });
    flags.roles = f.role;
  }
  const network: Record<string, unknown> = {};
  if (f.listen?.length) network.listen = f.listen;
  if (f.bootstrap?.length) network.bootstrap = f.bootstrap;
  if (Object.keys(network).length) flags.network = network;
  if (f.api) flags.api = { listen: f.api };
  const log: Record<string, unknown> = {};
  if (f.logLevel) log.level = f.logLevel;
  if (f.logFormat) log.format = f.logFormat;
  if (Object.keys(log).length) flags.log = log;
  return loadConfig({ ...(file ? { file } : {}), env: process.env, flags });
}



/** Start a node in this process for a one-shot command (no API, no daemon.json). */
async function oneShotNode(dataDir: string, flags: StartFlags, roles: NodeConfig['roles']): Promise<Daemon> {
  const config = nodeConfig(dataDir, flags);
  config.roles = roles;
  // A one-shot node must not collide with a configured daemon port, and runs only the roles asked for on every overlay.
  const port0 = (addrs: string[]) => addrs.map((a) => a.replace(/\/tcp\/[0-9]+/, '/tcp/0'));
  if (!flags.listen?.length) config.network.listen = port0(config.network.listen);
  config.overlays = config.overlays.map((o) => ({ ...o, roles, listen: port0(o.listen) }));
  const log = createLogger({ level: flags.logLevel ?? (config.log.level === 'info' ? 'warn' : config.log.level), format: 'pretty', name: 'node' });
  const identity = await loadNodeIdentity(dataDir);
  const { Daemon } = await import('../../node/daemon.js');
  return Daemon.start({ dataDir, config, identity, log, advertise: false, api: false });
}

async function waitForMarket(d: Daemon, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (d.net.peers().length > 0 && d.market.adverts.latest.size > 0) {
      await new Promise((r) => setTimeout(r, 300));
      return;
    }
    // Every bootstrap address answers with another PeerId: waiting will not help (run's narration says why).
    const boot = d.net.connectivity().bootstrap;
    if (boot.length && boot.every((b) => b.lastError?.code === 'NET_PEER_ID_MISMATCH')) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function register(program: Command): void {
  program
    .command('init')
    .description('create the data directory: a node key and config.yaml from the built-in defaults')
    .option('--no-passphrase', 'store the key unencrypted without asking')
    .option('--force-config', 'overwrite an existing config.yaml')
    .action(async (opts: { passphrase: boolean; forceConfig?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      if (!existsSync(keyFilePath(dataDir))) {
        const { pass, source } = opts.passphrase ? await passphraseFrom('passphrase for the new key (empty for none): ', true) : { pass: undefined, source: 'declined' as const };
        const id = createIdentity(dataDir, pass);
        out(`created key  ${id.did}`);
        out(`peer id      ${peerIdFromDid(id.did).toString()}`);
        out(`key file     ${id.keyFile} (${pass ? 'encrypted' : 'unencrypted'})`);
        if (!pass) warnUnencrypted(id.keyFile, source);
      } else out(`key exists   ${keyFilePath(dataDir)}`);
      const cfg = join(dataDir, 'config.yaml');
      if (!existsSync(cfg) || opts.forceConfig) {
        copyFileSync(DEFAULT_CONFIG, cfg);
        out(`wrote config ${cfg}`);
      } else out(`config exists ${cfg}`);
      out(`next: edit ${cfg}, then \`c0mpute start --data-dir ${dataDir}\``);
    });

  const startOpts = (c: Command) =>
    c
      .option('--config <file>', 'config file (default: <data-dir>/config.yaml if present)')
      .option('--role <role>', `roles to run (repeatable or comma-separated: ${ROLE_NAMES.join(', ')})`, collect)
      .option('--listen <multiaddr>', 'listen address (repeatable)', collect)
      .option('--bootstrap <multiaddr>', 'bootstrap peer with /p2p/<id> (repeatable)', collect)
      .option('--api <host:port>', 'control API address')
      .option('--log-level <level>', 'trace|debug|info|warn|error')
      .option('--log-format <fmt>', 'json|pretty');

  startOpts(program.command('start').description('run the node daemon (until SIGINT/SIGTERM)')).action(async (f: StartFlags, cmd: Command) => {
    const { dataDir } = globals(cmd);
    const running = readDaemonInfo(dataDir);
    if (running) throw new C0Error('DAEMON_RUNNING', `a daemon (pid ${running.pid}) already runs on ${dataDir}`);
    const config = nodeConfig(dataDir, f);
    const log = createLogger({ level: config.log.level, format: config.log.format, name: 'c0mpute' });
    // A signal while the node starts (which can take a while: an index built after an upgrade) stops it as soon as it
    // has started, cleanly; the same signal again kills it (no handler is left for it).
    let signalled: string | undefined;
    let onSignal = (sig: string) => {
      signalled = sig;
      log.info({ sig }, 'stopping once started (the same signal again kills at once)');
    };
    const onSigint = () => onSignal('SIGINT');
    const onSigterm = () => onSignal('SIGTERM');
    process.once('SIGINT', onSigint);
    process.once('SIGTERM', onSigterm);
    // C0MPUTE_FAILPOINT=<name>[,<name>]: tests only (docs/pools.md "Failure modes, tested"): the process exits 137 at that point.
    const failpoints = new Set((process.env.C0MPUTE_FAILPOINT ?? '').split(',').map((x) => x.trim()).filter(Boolean));
    const failpoint = (name: string) => {
      if (!failpoints.has(name)) return;
      log.error({ failpoint: name }, 'failpoint reached: exiting at once (C0MPUTE_FAILPOINT)');
      process.exit(137);
    };
    // a bug (an exception nothing caught, a rejection nothing handled), during the start too, is logged as one fatal
    // line, then the node stops (once it has started) and the process exits 70
    let starting: Promise<Daemon> | undefined;
    exitOnBug({ proc: process, log, stop: async () => (await starting?.catch(() => undefined))?.stop() });
    let d: Daemon;
    try {
      const identity = await loadNodeIdentity(dataDir);
      const { Daemon } = await import('../../node/daemon.js');
      starting = Daemon.start({ dataDir, config, identity, log, ...(failpoints.size ? { failpoint } : {}) });
      d = await starting;
    } catch (e) {
      // the start failed: a signal from now on does what it does by default
      process.removeListener('SIGINT', onSigint);
      process.removeListener('SIGTERM', onSigterm);
      throw e;
    }
    const stopped = new Promise<void>((resolve) => {
      let stopping = false;
      onSignal = (sig: string) => {
        if (stopping) return;
        stopping = true;
        log.info({ sig }, 'stopping');
        void d.stop().then(resolve, resolve);
      };
      if (signalled) onSignal(signalled);
    });
    if (signalled) return stopped; // no banner for a node already stopping
    if (failpoints.has('daemon.bug')) process.once('SIGUSR2', () => void Promise.reject(new Error('failpoint daemon.bug: a rejection nothing handles')));
    out(`c0mpute node ${d.did}`);
    out(`  peer id  ${d.net.peerId.toString()}`);
    for (const a of d.net.addrs()) out(`  listen   ${a}`);
    out(`  roles    ${config.roles.join(', ')}   overlay ${config.network.overlay}   api http://${d.apiAddress}`);
    if (d.apiAddress) {
      // asked of the node's own API, which a signal meanwhile closes: the stop is not held up for it
      const url = await Promise.race([consoleLoginUrl(d.apiAddress, ensureToken(dataDir)).catch(() => undefined), stopped.then(() => undefined)]);
      if (url) out(`  console  ${url}  (one-time login; \`c0mpute console\` prints another)`);
    }
    await stopped;
  });

  startOpts(
    program
      .command('run')
      .argument('<job>', 'job.yaml')
      .option('--policy <policy>', 'cheapest | fastest | balanced | trusted | private')
      .option('--input <file>', 'input file (- for standard input); overrides the job file')
      .option('--output <file>', 'write the output here (default: standard output)')
      .option('--wait <ms>', 'in-process node: how long to wait for the market to appear', '10000')
      .option('--json', 'print events and the result as JSON lines')
      .option('--overlay <name>', 'run it on this overlay (default: the node’s first)')
      .option('--limit <n>', 'list this many providers, ranked offers and offers before summarising the rest')
      .option('--all', 'list every provider, ranked offer and offer (no summary)')
      .option('--open', 'post it as an open order at maxPrice: the first valid claim wins (no offer window)')
      .option('--designated <did>', 'post it as an order only this provider may claim')
      .description('run a job: publish, collect offers, select, execute, verify, countersign'),
  ).action(async (jobFile: string, f: StartFlags & { policy?: string; input?: string; output?: string; wait: string; json?: boolean; overlay?: string; limit?: string; all?: boolean; open?: boolean; designated?: string }, cmd: Command) => {
    const { dataDir } = globals(cmd);
    const spec = readJobFile(jobFile, { ...(f.input ? { input: f.input } : {}), ...(f.policy ? { policy: f.policy } : {}), ...(f.open ? { open: true } : {}), ...(f.designated ? { designated: f.designated } : {}) });
    // events go to stderr (or stdout as JSON lines); what they said is not repeated by the final answer
    const said = new Set<string>();
    let verdictSaid = false;
    const limit = listLimit(f);
    const print = (ev: WireEvent) => {
      if (f.json) return out(JSON.stringify(ev, jsonReplacer));
      if (ev.e === 'admission' && (ev.admission as { verdict?: string }).verdict !== 'Admit') verdictSaid = true;
      renderEvent(ev, short, (s) => {
        said.add(s);
        process.stderr.write(s + '\n');
      }, { limit });
    };
    let result: Record<string, unknown> | undefined;
    const client = daemonClient(dataDir);
    if (client) {
      for await (const ev of apiStream(client.api, client.token, `/v1/run${q(f.overlay)}`, spec)) {
        if (ev.e === 'result') result = ev.result as Record<string, unknown>;
        else if (ev.e === 'error') {
          const err = ev.error as { code: string; message: string };
          throw new C0Error(err.code, err.message);
        } else print(ev as WireEvent);
      }
    } else {
      const d = await oneShotNode(dataDir, f, ['buyer']);
      try {
        await waitForMarket(d, Number(f.wait));
        const r = await d.runJob(parseJobSpec(spec), (e) => print(eventToWire(e)), f.overlay);
        result = resultToWire(r);
      } finally {
        await d.stop();
      }
    }
    if (!result) throw new C0Error('RUN_NO_RESULT', 'the daemon ended the run without a result');
    if (f.json) out(JSON.stringify({ e: 'result', result }, jsonReplacer));
    const status = result.status as string;
    if (status === 'completed') {
      const output = Buffer.from(result.output as string, 'base64');
      if (f.output) {
        writeFileSync(f.output, output);
        process.stderr.write(`▸ output (${output.length} bytes) written to ${f.output}\n`);
      } else if (!f.json) process.stdout.write(output.toString('utf8') + (output.at(-1) === 10 ? '' : '\n'));
      return;
    }
    const lines: string[] = [];
    if ((status === 'denied' || status === 'queue-expired') && !verdictSaid) {
      const a = result.admission as { reason?: string; reasons?: string[] } | undefined;
      lines.push(`✘ ${status === 'denied' ? 'the steward denied the claim' : 'the claim was still queued at its deadline'}: ${a?.reason ?? '?'}${a?.reasons && a.reasons.length > 1 ? ` (${a.reasons.join(', ')})` : ''}`);
    } else if (status === 'no-eligible-provider' || status === 'no-offers') {
      const network = result.network as { code: string; message: string } | undefined;
      if (network) lines.push(`✘ ${network.message} [${network.code}]`);
      const decision = result.decision as { result: { explanation?: Parameters<typeof renderExplanation>[0] } } | undefined;
      if (status === 'no-offers' && !decision?.result.explanation) lines.push('✘ no provider answered: no offers arrived in the collection window');
      if (decision?.result.explanation) renderExplanation(decision.result.explanation, short, (s) => lines.push(s), { limit });
    } else if (status === 'unclaimed') {
      const err = result.error as { code: string; message: string } | undefined;
      lines.push(`✘ ${err?.message ?? 'no valid claim arrived before the deadline'} [${err?.code ?? 'ORDER_NOT_CLAIMED'}]`);
    } else {
      lines.push(`✘ the job failed: ${(result.attempts as Array<{ provider: string; outcome: string }>).map((a) => `${short(a.provider)} ${a.outcome}`).join('; ') || 'no attempt could be made before the deadline'}`);
    }
    // the final failure is an error message: stderr only, and once
    throw new NegativeAnswer(
      lines.filter((l) => !said.has(l)),
      'stderr',
    );
  });

  program
    .command('status')
    .description('the running node: identity, roles, peers, what it holds')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const c = requireDaemon(dataDir);
      const s = (await apiCall(c.api, c.token, 'GET', '/v1/status')) as ReturnType<typeof localStatus>;
      if (o.json) return outJson(s);
      for (const [k, v] of Object.entries(s)) {
        // The network line is said plainly: "this node has no peers: …" / "connected to 2 peers but hears no market".
        if (k === 'network' && v && typeof v === 'object') {
          const n = v as { message: string; code?: string };
          out(`${k.padEnd(15)} ${n.code ? '⚠ ' : ''}${n.message}${n.code ? ` [${n.code}]` : ''}`);
        } else out(`${k.padEnd(15)} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
      }
    });

  program
    .command('peers')
    .description('connected peers')
    .option('--json', 'machine-readable output')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .action(async (o: { json?: boolean; overlay?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const c = requireDaemon(dataDir);
      const r = (await apiCall(c.api, c.token, 'GET', `/v1/peers${q(o.overlay)}`)) as { peers: Array<{ peerId: string; did?: string; addrs: string[] }> };
      if (o.json) return outJson(r);
      if (!r.peers.length) out('no peers connected');
      for (const p of r.peers) out(`${p.did ?? p.peerId}  ${p.addrs.join(' ')}`);
    });

  program
    .command('offers')
    .argument('<job>', 'job address (sha256:…)')
    .description('offers the running node holds for a job, and each provider’s eligibility')
    .option('--json', 'machine-readable output')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .action(async (job: string, o: { json?: boolean; overlay?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const c = requireDaemon(dataDir);
      const r = (await apiCall(c.api, c.token, 'GET', `/v1/offers/${encodeURIComponent(job)}${q(o.overlay)}`)) as { known: boolean; offers: Array<{ signer: string; address: string; record: { price: { amount: string; currency: string }; durationMs: number; expiresAt: number } }>; explanation?: { summary: string } };
      if (o.json) return outJson(r);
      if (!r.known) out('(this node has not seen that job)');
      for (const x of r.offers) out(`${short(x.signer).padEnd(18)} ${`${x.record.price.amount} ${x.record.price.currency}`.padEnd(14)} ${x.record.durationMs} ms  ${shortAddr(x.address)}`);
      if (r.explanation) out(r.explanation.summary);
    });

  program
    .command('jobs')
    .description('jobs this node published, newest first, with their receipts and verdicts')
    .option('--limit <n>', `how many of the newest (1–${JOBS_PAGE_MAX})`, '20')
    .option('--all', 'every job held, a page at a time')
    .option('--json', 'machine-readable output')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .action(async (o: { limit: string; all?: boolean; json?: boolean; overlay?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const limit = Number(o.limit);
      if (!/^[0-9]{1,9}$/.test(o.limit) || limit < 1 || limit > JOBS_PAGE_MAX) throw new C0Error('CLI_BAD_LIMIT', `--limit takes a whole number from 1 to ${JOBS_PAGE_MAX}, got "${o.limit.slice(0, 40)}"`, { field: 'limit' });
      type Page = { jobs: Array<{ address: string; record: { workload: string; announcedAt: number }; receipts: Array<{ provider: string; status: string; failure?: string; acceptance?: string }> }>; next?: string };
      const c = daemonClient(dataDir);
      const offline = c ? undefined : await offlineNode(dataDir);
      const pageOf = async (before: string | undefined): Promise<Page> => {
        const size = o.all ? JOBS_PAGE_MAX : limit;
        if (c) return (await apiCall(c.api, c.token, 'GET', `/v1/jobs?limit=${size}${before ? `&before=${encodeURIComponent(before)}` : ''}${o.overlay ? `&overlay=${encodeURIComponent(o.overlay)}` : ''}`)) as Page;
        return JSON.parse(JSON.stringify(await localJobs(offline!.overlay(o.overlay), { limit: size, ...(before ? { before } : {}) }), jsonReplacer)) as Page;
      };
      try {
        const list: Page['jobs'] = [];
        let next: string | undefined;
        do {
          const p = await pageOf(next);
          list.push(...p.jobs);
          next = p.next;
        } while (o.all && next !== undefined);
        if (o.json) return outJson({ jobs: list, ...(next !== undefined ? { next } : {}) });
        if (!list.length) out('no jobs yet');
        for (const j of list) {
          out(`${new Date(j.record.announcedAt).toISOString()}  ${shortAddr(j.address)}  ${j.record.workload}`);
          for (const rc of j.receipts) out(`    ${short(rc.provider)} ${rc.status}${rc.failure ? ` (${rc.failure})` : ''}${rc.acceptance ? `, ${rc.acceptance}` : ''}`);
        }
        if (next !== undefined) out(`(the newest ${list.length}; --limit or --all for more)`);
      } finally {
        await offline?.stop();
      }
    });

  program
    .command('reputation')
    .argument('[did]', 'one provider')
    .description('reputation derived from the receipts, acceptances and non-deliveries this node holds, counting only buyers it trusts')
    .option('--json', 'machine-readable output')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .action(async (did: string | undefined, o: { json?: boolean; overlay?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      if (did !== undefined) requireDid(did, 'did');
      const c = daemonClient(dataDir);
      let r: unknown;
      if (c) r = await apiCall(c.api, c.token, 'GET', (did ? `/v1/reputation/${encodeURIComponent(did)}` : '/v1/reputation') + q(o.overlay));
      else {
        const d = await offlineNode(dataDir);
        try {
          const m = d.overlay(o.overlay).market;
          r = did ? m.reputation().get(did) : { providers: m.reputation().all() };
        } finally {
          await d.stop();
        }
      }
      if (o.json) return outJson(r);
      const rows = did ? [r] : (r as { providers: unknown[] }).providers;
      if (!rows.length) return out('no evidence yet: every provider scores 0.5 (unknown)');
      // Counts are weighted (second-hand evidence weighs less than first-hand); `untrusted` is held but not counted (docs/market.md).
      const n = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(2));
      out('provider            score  jobs  ok   failed  disputed  undelivered  accuracy  untrusted');
      for (const x of rows as Array<{ did: string; score: number; jobs: number; successes: number; failures: number; disputes: number; nonDeliveries: number; accuracy: number; untrusted: number }>) {
        out(`${short(x.did).padEnd(18)}  ${x.score.toFixed(3)}  ${n(x.jobs).padEnd(4)}  ${n(x.successes).padEnd(3)}  ${n(x.failures).padEnd(6)}  ${n(x.disputes).padEnd(8)}  ${n(x.nonDeliveries).padEnd(11)}  ${x.accuracy.toFixed(3)}     ${x.untrusted}`);
      }
    });
}

/** Open the node's stores without networking (for offline jobs/reputation). */
async function offlineNode(dataDir: string): Promise<Daemon> {
  const config = nodeConfig(dataDir, {});
  config.roles = [];
  config.network.listen = ['/ip4/127.0.0.1/tcp/0'];
  config.network.bootstrap = [];
  config.overlays = config.overlays.map((o) => ({ ...o, roles: [], listen: ['/ip4/127.0.0.1/tcp/0'], bootstrap: [] }));
  const log = createLogger({ level: 'silent' });
  const identity = await loadNodeIdentity(dataDir);
  const { Daemon } = await import('../../node/daemon.js');
  return Daemon.start({ dataDir, config, identity, log, advertise: false, api: false });
}

/**
 * The presence summary of `c0mpute market` (docs/matching.md "Presence"): one
 * line of counts, whatever the market's size; each listed advert says its free
 * slots, and `--json` has the per-provider list.
 */
export function presenceLine(p: { live: number; freeSlots: number }): string {
  return `presence  ${num(p.live)} provider${p.live === 1 ? '' : 's'} live, ${num(p.freeSlots)} free slot${p.freeSlots === 1 ? '' : 's'}`;
}

/** The live `c0mpute market` (default subcommand of the market group). */
export function registerLiveMarket(program: Command): void {
  let market = program.commands.find((c) => c.name() === 'market');
  if (!market) market = program.command('market').description('the market: live adverts, offline selection and audits');
  market
    .command('list', { isDefault: true })
    .description('live adverts the running node holds and what they offer (the default); a long market is summarised')
    .option('--json', 'machine-readable output')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .option('--limit <n>', 'list this many providers (live first, best reputation first), then count the rest')
    .option('--all', 'list every provider')
    .action(async (o: { json?: boolean; overlay?: string; limit?: string; all?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const c = requireDaemon(dataDir);
      const limit = o.json && o.limit === undefined ? Infinity : listLimit(o);
      const path = `/v1/market${q(o.overlay)}`;
      const r = (await apiCall(c.api, c.token, 'GET', Number.isFinite(limit) ? `${path}${path.includes('?') ? '&' : '?'}limit=${limit}` : path)) as ReturnType<typeof localMarket>;
      if (o.json) return outJson(r);
      const counts = r as { total?: number; live?: number };
      const pres = (r as { presence?: { live: number; freeSlots: number } }).presence;
      if (pres) out(presenceLine(pres));
      const ads = r.adverts as Array<{ signer: string; provider?: string; pool?: { members: number }; live: boolean; reputation: number; freeSlots?: number; record: { tier: string; region?: string; workloads: string[]; hardware: { cpuCores: number; memoryMiB: number; gpus?: Array<{ model: string; vramMiB: number; count: number }> }; prices?: Array<{ workload: string; unit: string; price: { amount: string; currency: string } }> } }>;
      if (!ads.length) out('no adverts known yet');
      for (const a of ads) {
        const hw = a.record.hardware;
        const gpus = hw.gpus?.map((g) => `${g.count}× ${g.model} ${Math.round(g.vramMiB / 1024)} GiB`).join(', ') ?? 'no GPU';
        out(`${short(a.provider ?? a.signer)}${a.pool ? `  pool of ${a.pool.members} member${a.pool.members === 1 ? '' : 's'} seen` : ''}  ${a.live ? 'live' : 'EXPIRED'}${a.freeSlots === undefined ? '' : `  present, ${a.freeSlots} free slot${a.freeSlots === 1 ? '' : 's'}`}  tier ${a.record.tier}  region ${a.record.region ?? '(undisclosed)'}  rep ${a.reputation.toFixed(2)}`);
        out(`    ${hw.cpuCores} cores, ${Math.round(hw.memoryMiB / 1024)} GiB, ${gpus}`);
        for (const p of a.record.prices ?? []) out(`    ${p.workload}: ${p.price.amount} ${p.price.currency} per ${p.unit}`);
      }
      const total = counts.total ?? ads.length;
      if (total > ads.length) {
        const live = counts.live ?? 0;
        const shownLive = ads.filter((a) => a.live).length;
        out(`… and ${num(total - ads.length)} more providers (${num(live - shownLive)} live, ${num(total - ads.length - (live - shownLive))} expired); ${num(total)} known in all (--all lists every one)`);
      }
    });
}

