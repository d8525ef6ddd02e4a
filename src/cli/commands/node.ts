/**
 * Node commands: `init`, `start`, `run`, `status`, `peers`, `offers`, `jobs`,
 * `reputation`, and the live `market` listing. Commands that ask a running
 * daemon talk to its control API (found through <data-dir>/daemon.json and the
 * token file); `run`, `jobs` and `reputation` work without one too.
 */
import type { Command } from 'commander';
import { ROLE_NAMES } from '../../node/role-names.js';
import { apiCall } from '../../node/api-client.js';
import { JOBS_PAGE_MAX } from '../../node/jobs-page.js';
import { REPUTATION_PAGE_MAX } from '../../node/reputation-page.js';
import type { Figures } from '../../reputation/derive.js';
import type { status as localStatus, market as localMarket } from '../../node/control.js';
import { emptyValue, jsonReplacer, nonEmpty, out, outJson, requireDidArg, UsageError } from '../context.js';
import { short, shortAddr } from '../short.js';
import { daemonBuildLine, statusLines } from '../status-lines.js';
import { verdictWord } from '../../util/acceptance-text.js';
import { DEFAULT_LIST_LIMIT, listLimit, num, refuseLimitWithAll } from '../limit.js';
import { globals } from './index.js';
import { daemonClient, overlayQuery as q, requireDaemon } from '../daemon-client.js';
import type { InitOpts, RunFlags, StartFlags } from './node-actions.js';
import { printable } from '../../util/text.js';
import { NO_PROVIDER_ENDED, noProviderStatus } from '../../util/run-failure.js';

/**
 * A repeatable, comma-separated option's values. A value naming nothing (`--role ""`) is a wrong command line (exit 2):
 * before (review s40 F9) it was dropped, and the node started with the config's roles as if the flag were not there.
 */
function collect(flag: string): (v: string, prev?: string[]) => string[] {
  return (v, prev = []) => {
    const values = v.split(',').map((s) => s.trim()).filter(Boolean);
    if (!values.length) throw emptyValue(flag, v);
    return [...prev, ...values];
  };
}

/**
 * --config's file. An empty one (a unit's `--config "$CFG"` with CFG unset) is a wrong command line (exit 2): before
 * (review s40 round 2 F3) it was dropped, and the node started on the built-in defaults as if the flag were not there.
 */
function configFile(v: string): string {
  if (v === '') throw emptyValue('--config', v, 'a file');
  return v;
}

export function register(program: Command): void {
  program
    .command('init')
    .description('create the data directory: a node key and config.yaml from the built-in defaults')
    .option('--no-passphrase', 'store the key unencrypted without asking')
    .option('--force-config', 'overwrite an existing config.yaml')
    .action(async (opts: InitOpts, cmd: Command) => (await import('./node-actions.js')).init(opts, cmd));

  const startOpts = (c: Command) =>
    c
      .option('--config <file>', 'config file (default: <data-dir>/config.yaml if present)', configFile)
      .option('--role <role>', `roles to run (repeatable or comma-separated: ${ROLE_NAMES.join(', ')})`, collect('--role'))
      .option('--listen <multiaddr>', 'listen address (repeatable)', collect('--listen'))
      .option('--bootstrap <multiaddr>', 'bootstrap peer, best with /p2p/<PeerId> (repeatable)', collect('--bootstrap'))
      .option('--api <host:port>', 'control API address', nonEmpty('--api'))
      .option('--log-level <level>', 'trace|debug|info|warn|error|fatal|silent', nonEmpty('--log-level'))
      .option('--log-format <fmt>', 'json|pretty', nonEmpty('--log-format'));

  startOpts(program.command('start').description('run the node daemon (until SIGINT/SIGTERM)'))
    .option('--new-identity', 'go on with this data directory as the key’s DID, not the one it was started with before (identity.did): after a deliberate key change')
    .action(async (f: StartFlags, cmd: Command) => (await import('./node-actions.js')).start(f, cmd));

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
      .description('run a job: publish, collect offers, select, execute, verify, countersign')
      .addHelpText(
        'after',
        '\nWith a daemon running on the data directory, the job goes to it and runs with its config. The node options\n' +
          '(--config, --role, --listen, --bootstrap, --api, --log-level, --log-format) apply only to the node run starts\n' +
          'in its own process when none runs: with a daemon they are refused (USAGE_NODE_FLAG_WITH_DAEMON, exit 2),\n' +
          'and --wait is ignored.',
      ),
  ).action(async (jobFile: string, f: RunFlags, cmd: Command) => (await import('./node-actions.js')).run(jobFile, f, cmd));

  program
    .command('status')
    .description('the running node: identity, roles, peers, what it holds')
    .option('--json', 'machine-readable output')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const c = requireDaemon(dataDir);
      const s = (await apiCall(c.api, c.token, 'GET', '/v1/status')) as ReturnType<typeof localStatus>;
      if (o.json) return outJson(s);
      const { buildText } = await import('../../util/build-id.js');
      for (const [k, v] of Object.entries(s)) {
        // the daemon's build, and whether it is this command's (a daemon from before build ids: after its DID)
        if (k === 'build') {
          out(daemonBuildLine(v, buildText()));
          continue;
        }
        // The network line is said plainly: "this node has no peers: …" / "connected to 2 peers but hears no market".
        // So is the store's: "writable" / "⚠ takes no writes since …: No space left on device [STORE_WRITE_FAILED]".
        // the data directory's stamp, as this start found it: a line a warning (a later build wrote it…), under the build
        if (k === 'dataDir' && v && typeof v === 'object') {
          for (const w of (v as { warnings?: Array<{ code: string; message: string }> }).warnings ?? []) out(`${'data dir'.padEnd(15)} ⚠ ${w.message} [${w.code}]`);
          continue;
        }
        if ((k === 'network' || k === 'store') && v && typeof v === 'object') {
          const n = v as { message: string; code?: string; warnings?: Array<{ code: string; message: string }> };
          out(`${k.padEnd(15)} ${n.code ? '⚠ ' : ''}${n.message}${n.code ? ` [${n.code}]` : ''}`);
          // what is wrong beside the state, a line each: a peer's key held by two processes (net-health.ts)
          for (const w of n.warnings ?? []) out(`${''.padEnd(15)} ⚠ ${w.message} [${w.code}]`);
        } else for (const line of statusLines(k, v)) out(line);
        if (k === 'did' && !('build' in s)) out(daemonBuildLine(undefined, buildText()));
      }
      // a witness: what it holds, in one line per overlay it witnesses on (the market's `evidence` above is buyers'
      // and providers' records)
      for (const w of witnessOverlays(s)) {
        const label = (w.overlay === undefined ? 'witness' : `witness ${w.overlay}`).padEnd(15);
        try {
          out(`${label} ${witnessSummary((await apiCall(c.api, c.token, 'GET', `/v1/witness${q(w.overlay)}`)) as WitnessView, w.overlay)}`);
        } catch (e) {
          out(`${label} (not read: ${(e as Error).message})`);
        }
      }
      // a steward: its ledger in one line per overlay it stewards, as the witness's (QA witness pass, finding 10)
      for (const w of roleOverlays(s, 'steward')) {
        const label = (w.overlay === undefined ? 'steward' : `steward ${w.overlay}`).padEnd(15);
        try {
          out(`${label} ${stewardSummary((await apiCall(c.api, c.token, 'GET', `/v1/steward${q(w.overlay)}`)) as StewardView, w.overlay)}`);
        } catch (e) {
          out(`${label} (not read: ${(e as Error).message})`);
        }
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
      const r = (await apiCall(c.api, c.token, 'GET', `/v1/peers${q(o.overlay)}`)) as { peers: Array<{ peerId: string; did?: string; addrs: string[]; inbound?: boolean; listen?: string[]; processes?: number }> };
      if (o.json) return outJson(r);
      if (!r.peers.length) out('no peers connected');
      // a peer that dialled in is shown where it listens (what `bootstrap` takes), its connection's passing port after;
      // one whose key two processes hold is said so (`status` names where each listens)
      for (const p of r.peers) {
        const line = p.inbound && p.listen?.length ? `${p.did ?? p.peerId}  ${p.listen.join(' ')}  (dialled in from ${p.addrs.join(' ')})` : `${p.did ?? p.peerId}  ${p.addrs.join(' ')}`;
        out(p.processes !== undefined && p.processes > 1 ? `${line}  ⚠ ${p.processes} processes hold this key [NET_DUPLICATE_IDENTITY]` : line);
      }
    });

  program
    .command('offers')
    .argument('<job>', 'the job’s address (sha256:…), as `c0mpute jobs` lists it')
    .description('offers the running node holds for a job, and each provider’s eligibility')
    .option('--json', 'machine-readable output')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .action(async (job: string, o: { json?: boolean; overlay?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      // a wrong address is a wrong command line (exit 2), said before the daemon is asked
      const { isAddress } = await import('../../records/address.js');
      if (!isAddress(job)) throw new UsageError('ADDRESS_MALFORMED', `job must be sha256:<64 hex>, got "${String(job).slice(0, 80)}"`, { field: 'job' });
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
      // --limit has a default: only one given on the command line conflicts with --all
      if (o.all && cmd.getOptionValueSource('limit') === 'cli') refuseLimitWithAll({ all: true, limit: o.limit });
      const limit = Number(o.limit);
      if (!/^[0-9]{1,9}$/.test(o.limit) || limit < 1 || limit > JOBS_PAGE_MAX) throw new UsageError('CLI_BAD_LIMIT', `--limit takes a whole number from 1 to ${JOBS_PAGE_MAX}, got "${o.limit.slice(0, 40)}"`, { field: 'limit' });
      type Page = { jobs: JobsEntry[]; next?: string };
      const c = daemonClient(dataDir);
      const offline = c ? undefined : await (await import('./node-actions.js')).offlineNode(dataDir);
      const localJobs = c ? undefined : (await import('../../node/control.js')).jobs;
      const pageOf = async (before: string | undefined): Promise<Page> => {
        const size = o.all ? JOBS_PAGE_MAX : limit;
        if (c) return (await apiCall(c.api, c.token, 'GET', `/v1/jobs?limit=${size}${before ? `&before=${encodeURIComponent(before)}` : ''}${o.overlay ? `&overlay=${encodeURIComponent(o.overlay)}` : ''}`)) as Page;
        return JSON.parse(JSON.stringify(await localJobs!(offline!.overlay(o.overlay), { limit: size, ...(before ? { before } : {}) }), jsonReplacer)) as Page;
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
        // this lists the jobs the node published: a provider's operator reading "no jobs" after a day of work is told where that is
        if (!list.length) out('no jobs yet published by this node (the jobs it ran as a provider: the console’s Jobs page, `c0mpute console`)');
        for (const j of list) {
          out(jobsHeadLine(j));
          for (const l of jobsBody(j)) out(`    ${l}`);
        }
        if (next !== undefined) out(`(the newest ${list.length}; --limit or --all for more)`);
      } finally {
        await offline?.stop();
      }
    });

  program
    .command('reputation')
    .argument('[did]', 'one provider')
    .description('reputation derived from the receipts, acceptances and non-deliveries this node holds, counting only buyers it trusts: first-hand evidence first, with the counts of the whole')
    .option('--limit <n>', `list this many providers (1–${REPUTATION_PAGE_MAX}; default ${DEFAULT_LIST_LIMIT}; --json without it: every one)`)
    .option('--all', 'every provider, a page at a time')
    .option('--json', 'machine-readable output')
    .option('--overlay <name>', 'the overlay (default: the node’s first)')
    .action(async (did: string | undefined, o: { limit?: string; all?: boolean; json?: boolean; overlay?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      if (did !== undefined) await requireDidArg(did, 'did', 'DID_MALFORMED');
      // one provider is no listing: --limit and --all have nothing to bound (before, they were taken and ignored)
      if (did !== undefined && (o.limit !== undefined || o.all)) throw new UsageError('CLI_OPTIONS_CONFLICT', `${o.all ? '--all' : '--limit'} bounds the listing; with a DID, reputation shows that one provider: give one of them`, { field: o.all ? 'all' : 'limit' });
      refuseLimitWithAll(o);
      const { asReputationPage, collectReputation, reputationLimit, reputationLines, reputationPageOf, reputationQuery, reputationOne } = await import('../reputation-list.js');
      const limit = reputationLimit(o.limit);
      const c = daemonClient(dataDir);
      const offline = c ? undefined : await (await import('./node-actions.js')).offlineNode(dataDir);
      try {
        if (did !== undefined) {
          const r = c ? await apiCall(c.api, c.token, 'GET', `/v1/reputation/${encodeURIComponent(did)}${q(o.overlay)}`) : offline!.overlay(o.overlay).market.reputation().get(did);
          if (o.json) return outJson(r);
          for (const l of reputationOne(r as Figures)) out(l);
          return;
        }
        // the daemon's page, or the same page made here from the stores (src/node/reputation-page.ts): same order, same counts
        // without a daemon every provider's figures are derived once, then paged (--all asks for many pages)
        let figures: Figures[] | undefined;
        const pageOf = async (size: number, after: string | undefined) => {
          if (!c) return reputationPageOf((figures ??= [...offline!.overlay(o.overlay).market.reputation().all()]), size, after);
          const query = reputationQuery(size, after);
          if (o.overlay) query.set('overlay', o.overlay);
          return asReputationPage(await apiCall(c.api, c.token, 'GET', `/v1/reputation?${query.toString()}`), size, after);
        };
        const listing = await collectReputation(pageOf, { limit, all: o.all === true || (o.json === true && o.limit === undefined) });
        if (o.json) return outJson(listing);
        for (const l of reputationLines(listing)) out(l);
      } finally {
        await offline?.stop();
      }
    });
}


/** A receipt that came after its run ended, as `GET /v1/jobs` gives it (src/node/job-history.ts LateReceipt). */
export interface JobsLate {
  provider: string;
  status: string;
  note?: string;
}

/**
 * A job's first line in `c0mpute jobs`: when, its whole address, its workload. The address whole, not shortened:
 * `c0mpute offers <job>` and `market export --job` take it as this prints it (a shortened one is ADDRESS_MALFORMED).
 */
export function jobsHeadLine(j: { address: string; record: { workload: string; announcedAt: number } }): string {
  return `${new Date(j.record.announcedAt).toISOString()}  ${j.address}  ${j.record.workload}`;
}

/**
 * A receipt under its job in `c0mpute jobs`: its provider, status and failure code, and this node's verdict on it, a
 * failed receipt's `accepted` said `acknowledged` (src/util/acceptance-text.ts): `orkanpro…ooGs failed
 * (EXEC_EMPTY_OUTPUT), acknowledged`.
 */
export function jobsReceiptLine(rc: { provider: string; status: string; failure?: string; acceptance?: string }): string {
  return `${short(rc.provider)} ${receiptText(rc)}`;
}

/**
 * What `c0mpute jobs` says under a job whose provider's receipt came after the run ended, never countersigned
 * (docs/node.md "Job history"): the run said `failed` while the provider reports otherwise, and this says why.
 */
export function jobsLateLine(late: JobsLate): string {
  return `late: ${short(late.provider)} ${late.note ?? `reports ${late.status} after this node’s run of the job ended`}`;
}

/** A receipt of a job as `GET /v1/jobs` gives it. */
export interface JobsReceipt {
  address?: string;
  provider: string;
  status: string;
  failure?: string;
  acceptance?: string;
}

/** A job as `GET /v1/jobs` gives it (control.ts jobToWire); a daemon before `outcome` gives attempts only for a job with no receipt. */
export interface JobsEntry {
  address: string;
  record: { workload: string; announcedAt: number; deadline?: number; order?: { designated?: string } };
  receipts: JobsReceipt[];
  attempts?: Array<{ provider: string; reason?: string; receipts?: string[]; ended?: { code?: string; message: string } }>;
  outcome?: { status: string; provider?: string; verdict?: string; failure?: string; reason?: string; code?: string; message?: string; at?: number };
  late?: JobsLate & { receipt?: string };
}

/**
 * A receipt as a line says it: `completed, accepted`, `failed (EXEC_TIMEOUT), acknowledged` (a failed receipt's
 * `accepted` said `acknowledged`: src/util/acceptance-text.ts).
 */
function receiptText(rc: JobsReceipt): string {
  return `${rc.status}${rc.failure ? ` (${rc.failure})` : ''}${rc.acceptance ? `, ${verdictWord(rc.acceptance, rc.status)}` : ''}`;
}

/**
 * The lines `c0mpute jobs` prints under a job (docs/node.md "Job history"): how this node's run ended (`run
 * completed`, `run failed`, or `no outcome held`), each attempt (the provider a selection chose, with its receipt and
 * this node's verdict, or the non-delivery it signed), and a receipt that came after the run ended (`late:`), which is
 * never the job's status. Before (QA, reputation and audit pass, F1), a job with a receipt held listed its receipts
 * only: a run that failed, its non-delivery signed, read `completed` once the provider's receipt came late.
 */
export function jobsBody(j: JobsEntry): string[] {
  // a daemon from before `outcome`: its receipts, and the attempts of a job with none
  if (!j.outcome) {
    const lines = j.receipts.map(jobsReceiptLine);
    if (j.late) lines.push(jobsLateLine(j.late));
    if (!j.receipts.length) lines.push(jobsNoOutcome(j.attempts));
    return lines;
  }
  const attempts = j.attempts ?? [];
  const o = j.outcome;
  // a provider selected and the run broken off by this node's stop or crash (the daemon's outcome.code, job-history.ts outcomeNow)
  const broken = o.code === 'JOB_INTERRUPTED' ? 'no outcome held: the run was broken off by this node’s stop or crash (JOB_INTERRUPTED)' : 'no outcome held';
  const lines = [o.status === 'completed' ? 'run completed' : o.status === 'failed' ? 'run failed' : attempts.length ? broken : noSelection(j)];
  const byAddress = new Map(j.receipts.filter((rc) => rc.address !== undefined).map((rc) => [rc.address!, rc]));
  const shown = new Set<string>();
  attempts.forEach((a, i) => {
    // the late receipt is said on its own line, below
    const rcs = (a.receipts ?? []).filter((x) => x !== j.late?.receipt).map((x) => byAddress.get(x)).filter((rc): rc is JobsReceipt => rc !== undefined);
    for (const x of a.receipts ?? []) shown.add(x);
    const parts = rcs.map(receiptText);
    if (a.reason) parts.push(`non-delivery signed (${a.reason})`);
    if (!parts.length) parts.push(`${j.late && (a.receipts ?? []).includes(j.late.receipt ?? '') ? 'no receipt on the run, no non-delivery' : 'no receipt, no non-delivery'}${attemptEnded(a.ended)}`);
    lines.push(`attempt ${i + 1}: ${short(a.provider)} ${parts.join('; ')}`);
  });
  // receipts no attempt held here names (a job from before selections were kept)
  for (const rc of j.receipts) if (!(rc.address && (shown.has(rc.address) || rc.address === j.late?.receipt))) lines.push(jobsReceiptLine(rc));
  if (j.late) lines.push(jobsLateLine(j.late));
  return lines;
}

/**
 * How the run said an attempt ended that got no receipt and no non-delivery (GET /v1/jobs `attempts[].ended`, kept by
 * the buyer: docs/node.md "Job history"), as a clause: `: provider busy with another of our jobs: refused: EXEC_BUSY`,
 * its code added in brackets when the words do not carry it; empty for none (a daemon before it, an attempt before notes).
 */
export function attemptEnded(e: { code?: string; message: string } | undefined): string {
  if (!e) return '';
  return `: ${e.message}${e.code && !e.message.includes(e.code) ? ` [${e.code}]` : ''}`;
}

/**
 * A job of this node's with no outcome and no provider selected: an order whose deadline passed unclaimed (the daemon's
 * `outcome.code` ORDER_NOT_CLAIMED), an order before its deadline (no claim taken yet), else an auction none was
 * selected for: how its run ended when the daemon kept it (JOB_NO_OFFERS, JOB_NO_ELIGIBLE_PROVIDER, JOB_INTERRUPTED with
 * the run's words), else that nobody was selected. Before (QA qaMatch F7), all three read "no outcome held (no provider
 * was selected)".
 */
function noSelection(j: JobsEntry): string {
  const designated = j.record.order?.designated;
  const order = designated ? `order designated to ${short(designated)}` : 'open order';
  // its wait for claims broken off by this node's stop or crash (QA qaOrd F3: it read "it may be claimed until …", then ORDER_NOT_CLAIMED)
  if (j.record.order && j.outcome?.code === 'JOB_INTERRUPTED') return `no outcome held (${order}): the run was broken off before a claim was taken: this node stopped or crashed, or its client withdrew the order (JOB_INTERRUPTED)`;
  if (j.outcome?.code === 'ORDER_NOT_CLAIMED') return `unclaimed: ${order}, its deadline passed${j.outcome.at !== undefined ? ` at ${new Date(j.outcome.at).toISOString()}` : ''} with no claim taken (ORDER_NOT_CLAIMED)`;
  if (j.record.order && j.record.deadline !== undefined) return `no outcome held (${order}: no claim taken; it may be claimed until ${new Date(j.record.deadline).toISOString()})`;
  // how the run said it ended, as the daemon kept it with the job: in the words `c0mpute run` and the console use
  // how its run ended, as the daemon kept it (JOB_NO_OFFERS, JOB_NO_PROVIDER_SELECTED, the error that ended it…): its
  // words, else the ones `c0mpute run` and the console use for the code
  const code = j.outcome?.code;
  if (code === undefined) return 'no outcome held (no provider was selected)';
  const kept = noProviderStatus(code);
  const said = kept ? NO_PROVIDER_ENDED[kept].said : code === 'JOB_INTERRUPTED' ? 'the run was broken off by this node’s stop or crash' : 'no provider was selected';
  return `no outcome held: ${printable(j.outcome?.message ?? said)} (${printable(code)})`;
}

/**
 * What `c0mpute jobs` says of a job with no receipt held when the daemon gives no `outcome` (one before this version):
 * that no outcome is held, and the providers selected with the non-delivery signed against each (a daemon before
 * attempts were listed gives none: then only the first).
 */
export function jobsNoOutcome(attempts: ReadonlyArray<{ provider: string; reason?: string }> | undefined): string {
  if (!attempts) return 'no outcome held';
  if (!attempts.length) return 'no outcome held (no provider was selected)';
  const each = attempts.map((a) => `${short(a.provider)} ${a.reason ? `non-delivery signed (${a.reason})` : 'no receipt, no non-delivery'}`);
  return `no outcome held; selected: ${each.join('; ')}`;
}

/**
 * What `c0mpute market` says beside an advert of the presence heard: a provider's free slots; a pool's, those of all its
 * members present (any of them may run the work: docs/pools.md "One entry in the market"), so they add up with the
 * presence line. A daemon before `pool.freeSlots` gives the entry's member's alone, said as before.
 */
export function advertPresence(a: { live: boolean; freeSlots?: number; pool?: { present?: number; freeSlots?: number } }, presenceHeard: boolean): string {
  const slots = (n: number) => `${num(n)} free slot${n === 1 ? '' : 's'}`;
  if (a.pool?.present !== undefined && a.pool.freeSlots !== undefined) return `  present (${num(a.pool.present)} member${a.pool.present === 1 ? '' : 's'}), ${slots(a.pool.freeSlots)}`;
  if (a.freeSlots !== undefined) return `  present, ${slots(a.freeSlots)}`;
  return presenceHeard && a.live ? '  not present now' : '';
}

/**
 * The presence summary of `c0mpute market` (docs/matching.md "Presence"): one
 * line of counts, whatever the market's size; each listed advert says its free
 * slots, and `--json` has the per-provider list.
 */
export function presenceLine(p: { live: number; freeSlots: number; pooled?: { members: number; pools: number } }): string {
  // presence is per machine: a pool's members each count here, while the list below shows the pool once (QA qaPnet F8)
  const pooled = p.pooled && p.pooled.members > 0 ? ` (${num(p.pooled.members)} of them member${p.pooled.members === 1 ? '' : 's'} of ${num(p.pooled.pools)} pool${p.pooled.pools === 1 ? '' : 's'})` : '';
  return `presence  ${num(p.live)} provider${p.live === 1 ? '' : 's'} live${pooled}, ${num(p.freeSlots)} free slot${p.freeSlots === 1 ? '' : 's'}`;
}

/** The `market` line for adverts the new-advertiser flood limit turned away since the node started (docs/network.md §10). */
export function turnedAwayLine(n: number): string {
  return `⚠ ${num(n)} advert${n === 1 ? '' : 's'} from new advertisers turned away by the new-advertiser rate limit since start [NET_NEW_ADVERTISER_LIMIT]: those providers are missing here until their adverts are heard again`;
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
      // a wrong command line (--limit with --all) is said before the daemon is looked for
      const limit = o.json && o.limit === undefined ? Infinity : listLimit(o);
      const c = requireDaemon(dataDir);
      const path = `/v1/market${q(o.overlay)}`;
      const r = (await apiCall(c.api, c.token, 'GET', Number.isFinite(limit) ? `${path}${path.includes('?') ? '&' : '?'}limit=${limit}` : path)) as ReturnType<typeof localMarket>;
      if (o.json) return outJson(r);
      const counts = r as { total?: number; live?: number };
      const pres = (r as { presence?: { live: number; freeSlots: number; pooled?: { members: number; pools: number } } }).presence;
      if (pres) out(presenceLine(pres));
      const ads = r.adverts as Array<{ signer: string; provider?: string; pool?: { members: number; present?: number; freeSlots?: number }; live: boolean; reputation: number; freeSlots?: number; record: { tier: string; region?: string; workloads: string[]; hardware: { cpuCores: number; memoryMiB: number; gpus?: Array<{ model: string; vramMiB: number; count: number }> }; prices?: Array<{ workload: string; unit: string; price: { amount: string; currency: string } }> } }>;
      if (!ads.length) out('no adverts known yet');
      for (const a of ads) {
        const hw = a.record.hardware;
        const gpus = hw.gpus?.map((g) => `${g.count}× ${g.model} ${Math.round(g.vramMiB / 1024)} GiB`).join(', ') ?? 'no GPU';
        // "advert live" is the advert's own lifetime (up to its expiry after a provider stops); whether the provider is
        // there now is its presence, said beside it where presence is heard: a stopped provider read "live" (QA pass)
        const presence = advertPresence(a, pres !== undefined);
        out(`${short(a.provider ?? a.signer)}${a.pool ? `  pool of ${a.pool.members} member${a.pool.members === 1 ? '' : 's'} seen` : ''}  ${a.live ? 'advert live' : 'advert EXPIRED'}${presence}  tier ${a.record.tier}  region ${a.record.region ?? '(undisclosed)'}  rep ${a.reputation.toFixed(2)}`);
        out(`    ${hw.cpuCores} cores, ${Math.round(hw.memoryMiB / 1024)} GiB, ${gpus}`);
        for (const p of a.record.prices ?? []) out(`    ${p.workload}: ${p.price.amount} ${p.price.currency} per ${p.unit}`);
      }
      const total = counts.total ?? ads.length;
      if (total > ads.length) {
        const live = counts.live ?? 0;
        const shownLive = ads.filter((a) => a.live).length;
        out(`… and ${num(total - ads.length)} more providers (${num(live - shownLive)} live, ${num(total - ads.length - (live - shownLive))} expired); ${num(total)} known in all (--all lists every one)`);
      }
      // adverts the flood limit refused at the door are not "known": said, so they do not read as providers that do not exist
      const away = (r as { advertsTurnedAway?: number }).advertsTurnedAway;
      if (away) out(turnedAwayLine(away));
    });
}

type WitnessView = { stewards: Record<string, { held: { length: number }; evidence: number; last?: { length?: number; refused?: string }; rolledBack?: unknown }>; notNamed?: unknown };

/**
 * The overlays of GET /v1/status that run the witness role: the primary (`overlay` undefined: its line is `witness`,
 * and GET /v1/witness asked without ?overlay) when its roles have it, then each other overlay that has it, by name.
 */
export function witnessOverlays(s: { roles?: unknown; overlays?: unknown }): Array<{ overlay?: string }> {
  return roleOverlays(s, 'witness');
}

/** The overlays of GET /v1/status that run `role` (as witnessOverlays). */
export function roleOverlays(s: { roles?: unknown; overlays?: unknown }, role: string): Array<{ overlay?: string }> {
  const has = (roles: unknown) => Array.isArray(roles) && roles.includes(role);
  const others = s.overlays && typeof s.overlays === 'object' ? Object.entries(s.overlays as Record<string, { roles?: unknown } | undefined>) : [];
  return [...(has(s.roles) ? [{}] : []), ...others.filter(([, o]) => has(o?.roles)).map(([overlay]) => ({ overlay }))];
}

/** `c0mpute status`'s witness line: stewards held, the longest length held, evidence pairs kept, refusals to look at. */
export function witnessSummary(w: WitnessView, overlay?: string): string {
  const all = Object.values(w.stewards);
  const held = all.filter((s) => s.held.length > 0);
  const longest = held.reduce((m, s) => Math.max(m, s.held.length), 0);
  const evidence = all.reduce((n, s) => n + s.evidence, 0);
  const rolledBack = all.filter((s) => s.rolledBack).length;
  const flags = [
    evidence ? `⚠ evidence ${evidence} pair${evidence === 1 ? '' : 's'} kept` : 'evidence 0',
    ...(rolledBack ? [`⚠ ${rolledBack} steward${rolledBack === 1 ? '' : 's'} rolled back [WITNESS_LEDGER_ROLLED_BACK]`] : []),
    ...(w.notNamed ? ['⚠ not named in network.witnesses: its receipts are dropped [WITNESS_NOT_NAMED]'] : []),
  ];
  return `${held.length} steward${held.length === 1 ? '' : 's'} held${held.length ? ` (longest length ${longest})` : ''}, ${flags.join(', ')} (c0mpute witness status${overlayFlag(overlay)})`;
}

/** ` --overlay NAME` for a command hint about an overlay other than the primary (undefined: the primary, no flag; an overlay name needs no quoting). */
function overlayFlag(overlay: string | undefined): string {
  return overlay === undefined ? '' : ` --overlay ${overlay}`;
}

type StewardView = {
  ledger: { length: number };
  queued?: unknown[];
  attestation?: { grade: string; witnesses: Array<{ witness: string; length: number }>; witnessedLength: number };
  contradictingWitnesses?: Array<{ code: string }>;
  evidence?: { pairs: number };
};

/**
 * `c0mpute status`'s steward line: the ledger's length, how far it is witnessed (and by how many witnesses), the
 * claims queued, and what to look at: witnesses whose receipts contradict it, equivocation evidence against it.
 */
export function stewardSummary(v: StewardView, overlay?: string): string {
  const a = v.attestation;
  const length = v.ledger.length;
  const witnessed = !a || a.grade !== 'witnessed' ? 'self-attested' : `witnessed to length ${a.witnessedLength} by ${a.witnesses.length} witness${a.witnesses.length === 1 ? '' : 'es'}${a.witnessedLength < length ? ` (the last ${length - a.witnessedLength} self-attested)` : ''}`;
  const queued = v.queued?.length ?? 0;
  const contra = v.contradictingWitnesses ?? [];
  const codes = [...new Set(contra.map((c) => c.code))].sort();
  const flags = [
    ...(contra.length ? [`⚠ ${contra.length} witness${contra.length === 1 ? '' : 'es'} contradict${contra.length === 1 ? 's' : ''} it [${codes.join(', ')}]`] : []),
    ...(v.evidence ? [`⚠ equivocation evidence ${v.evidence.pairs} pair${v.evidence.pairs === 1 ? '' : 's'}`] : []),
  ];
  return `ledger length ${length}, ${witnessed}, ${queued} queued${flags.length ? `, ${flags.join(', ')}` : ''} (c0mpute steward status${overlayFlag(overlay)})`;
}
