/**
 * A node's control API for the console's feed tests (console-browser-feed.test.ts), run as a process of its own
 * so the test can stop it (SIGSTOP: a stalled daemon) and kill it (SIGKILL, mid-run). The console's own code serves
 * the page, logs in and streams events (src/node/console-routes.ts, on the control API's server, src/node/api.ts),
 * with a short keep-alive; the data routes answer fixed views of one overlay, among them a job whose provider wrote
 * hostile text (a 1 KiB word, bidirectional controls), and the overlay's steward and witness views (GET /v1/steward,
 * /v1/witness) of a ledger a witness contradicts.
 *
 * Prints one line, `{"api": "127.0.0.1:PORT", "token": "…", "job": …, "receipt": …, "providers": […]}`; then:
 *   POST /v1/harness/emit   one more `job` event on the stream (the Jobs view lists "run N")
 *   GET  /v1/harness/state  { streams: event streams open now, offers: the query of every /v1/offers asked }
 */
import { Registry } from 'prom-client';
import { startApi, type Route } from '../../src/node/api.js';
import { consoleGate } from '../../src/node/console-routes.js';
import type { ConsoleHub, HubEvent } from '../../src/node/console-hub.js';
import { ConsoleSessions } from '../../src/node/console-session.js';
import type { Daemon } from '../../src/node/daemon.js';
import { parseOffersProviders } from '../../src/node/control.js';
import { silentLogger } from '../../src/util/log.js';
import { P } from '../unit/market/fixtures.js';

// short, so a stalled harness is stale in 2 s; not so short that a loaded machine's pause looks like one
const HARNESS_PING_MS = 1000;
const JOB = `sha256:${'a'.repeat(64)}`;
const RECEIPT = `sha256:${'b'.repeat(64)}`;
/** A job on the buyer's second (older) page of jobs, and that page's cursor. */
const OLDER_JOB = `sha256:${'9'.repeat(64)}`;
const OLDER_CURSOR = `${'0'.repeat(15)}1!${OLDER_JOB}`;
/** A provider's word of 1 KiB with no break in it. */
const LONG_WORD = 'W'.repeat(1024);
/** Text that reads "verified" once a right-to-left override has reversed it (a decoded receipt's message has it after `did:key:`: text, not a DID). */
const REVERSED = '\u202edeifirev';

const TOKEN = 'harness-token-0123456789';
const PROVIDERS = [P(1).did, P(2).did, P(3).did];
const BUYER = P(9).did;

const listeners = new Set<(e: HubEvent) => void>();
const hub = { listen: (l: (e: HubEvent) => void) => (listeners.add(l), () => void listeners.delete(l)) } as unknown as ConsoleHub;
let runs = 0;
const offersAsked: string[] = [];
const now = Date.now();

const overview = { did: BUYER, api: '', uptimeMs: 1000, primary: 'public', overlays: [{ name: 'public', roles: ['buyer', 'steward', 'witness'], peerId: '12D3KooWharness', addrs: [], peers: [{ peerId: '12D3KooWlinked', did: PROVIDERS[0], addrs: [], streams: { out: true, in: true }, backoffMs: 0 }, { peerId: '12D3KooWbacked', did: PROVIDERS[1], addrs: [], streams: { out: false, in: true }, backoffMs: 42_000 }], refused: {}, health: { state: 'ok' } }], samples: [] };
const rec = (type: string, address: string, signer: string, record: Record<string, unknown>) => ({ type, address, signer, record });
const walk = {
  job: rec('c0mpute.job/1', JOB, BUYER, { workload: 'evil.echo', maxPrice: { amount: '0.01', currency: 'USD' }, deadline: now + 60_000, announcedAt: now, requirements: {} }),
  offers: [],
  selections: [],
  receipts: [rec('c0mpute.receipt/1', RECEIPT, PROVIDERS[0]!, { status: 'failed', provider: PROVIDERS[0], offer: `sha256:${'c'.repeat(64)}`, startedAt: now, completedAt: now + 10, failure: { code: 'EXEC_FAILED', message: LONG_WORD } })],
  acceptances: [],
  nondeliveries: [],
  explanation: { summary: '1 provider known', providers: [] },
  run: {
    done: true,
    events: [
      { e: 'job', job: { address: JOB } },
      { e: 'progress', provider: PROVIDERS[0], message: `${LONG_WORD} ${REVERSED}` },
      { e: 'failover', from: PROVIDERS[0], reason: `\u2067${LONG_WORD}` },
    ],
  },
};
const advertRow = (did: string, i: number) => ({
  type: 'c0mpute.advert/1',
  address: `sha256:${String(i).repeat(64)}`,
  signer: did,
  live: true,
  reputation: 0.5,
  record: { seq: 1, expiresAt: now + 600_000, workloads: ['builtin.sha256'], tier: 'standard', region: 'eu-west', hardware: { cpuCores: 4, memoryMiB: 8192 }, prices: [] },
});

// a steward one of whose witnesses holds a longer ledger and evidence of two histories, its grade still "witnessed"
// (review s40 C F1), and this node's witness role holding a steward whose ledger went back
const STEWARD = P(8).did;
const steward = {
  steward: BUYER,
  overlay: 'public',
  ledger: { length: 6, head: `sha256:${'e'.repeat(64)}` },
  // a tree as the organisation devnet's (docs/overlays.md): its table made a phone's Overlays page wider than the window (QA ffConsole F2)
  teams: [
    { id: 'acme', priority: 0, guarantee_uj: 2_000_000_000, guarantee_devices: 2, spent_uj: 0, reserved_uj: 0, borrowed_uj: 0, held_devices: 0, open_claims: 0, used_uj: 0 },
    { id: 'team-a', parent: 'acme', priority: 2, guarantee_uj: 600_000_000, guarantee_devices: 1, spent_uj: 53_400_000, reserved_uj: 40_000_000, borrowed_uj: 0, held_devices: 1, open_claims: 1, used_uj: 93_400_000 },
    { id: 'team-b', parent: 'acme', priority: 1, guarantee_uj: 300_000_000, guarantee_devices: 1, spent_uj: 0, reserved_uj: 0, borrowed_uj: 0, held_devices: 0, open_claims: 0, used_uj: 0 },
  ],
  queued: [],
  attestation: { grade: 'witnessed', witnessedLength: 4, witnesses: [{ witness: PROVIDERS[2], length: 4 }] },
  contradictingWitnesses: [{ witness: PROVIDERS[2], code: 'WITNESS_LENGTH_BEYOND', length: 6, ours: 5 }],
  evidence: { pairs: 1, witnesses: 1, seqs: [5] },
};
const witness = {
  witness: BUYER,
  overlay: 'public',
  stewards: { [STEWARD]: { held: { length: 6, head: `sha256:${'f'.repeat(64)}` }, evidence: 1, last: { refused: 'WITNESS_LEDGER_ROLLED_BACK', at: now }, rolledBack: { held: 6, heard: 5, served: 5, at: now } } },
};

// the decision of a run no provider was eligible for (src/roles/buyer.ts): every provider's verdict, the summary and what would widen the market
const NO_ELIGIBLE = {
  result: {
    ok: false,
    ranked: [],
    ineligible: [{ provider: PROVIDERS[1], eligible: false, failures: [{ code: 'CPU_CORES_TOO_FEW', message: 'has 8 CPU cores; the job needs 64' }] }],
    explanation: {
      summary: 'No provider is eligible among 2 known: no provider has at least 64 CPU cores.',
      relaxations: [{ text: 'To widen the market: ask for ≤ 8 CPU cores → 1 provider eligible' }],
      providers: [
        { provider: PROVIDERS[0], eligible: false, failures: [{ code: 'CPU_CORES_TOO_FEW', message: 'has 4 CPU cores; the job needs 64' }, { code: 'OFFER_MISSING', message: 'no offer for this job' }] },
        { provider: PROVIDERS[1], eligible: false, failures: [{ code: 'CPU_CORES_TOO_FEW', message: 'has 8 CPU cores; the job needs 64' }] },
      ],
      expired: [],
    },
  },
};

const routes: Route[] = [
  { method: 'GET', path: '/v1/console/overview', handler: async () => overview },
  { method: 'GET', path: '/v1/steward', handler: async () => steward },
  { method: 'GET', path: '/v1/witness', handler: async () => witness },
  {
    method: 'GET',
    path: '/v1/console/jobs',
    // two pages of the buyer's jobs: the first with the cursor of the older one (QA ffConsole F3)
    handler: async ({ query }) => ({
      ...(query.get('before') === OLDER_CURSOR
        ? { buyer: [{ address: OLDER_JOB, workload: 'builtin.sha256', announcedAt: now - 3_600_000, attempts: 1, status: 'completed', provider: PROVIDERS[1] }], buyerMore: false }
        : { buyer: [{ address: JOB, workload: 'evil.echo', announcedAt: now, attempts: 1, status: 'failed', provider: PROVIDERS[0] }], buyerMore: true, buyerNext: OLDER_CURSOR }),
      provider: [],
      running: runs ? [{ run: runs, startedAt: now, events: [{ e: 'progress' }] }] : [],
      providerRunning: 0,
    }),
  },
  { method: 'GET', path: '/v1/console/job/:job', handler: async () => walk },
  { method: 'GET', path: '/v1/console/record/:address', handler: async ({ params }) => ({ ...rec('c0mpute.receipt/1', params.address!, PROVIDERS[0]!, { status: 'failed', provider: PROVIDERS[0], failure: { code: 'EXEC_FAILED', message: `did:key:${REVERSED}` } }), size: 300 }) },
  { method: 'GET', path: '/v1/market', handler: async () => ({ total: 3, live: 3, presence: { live: 0, freeSlots: 0 }, matched: 3, offset: 0, workloads: ['builtin.sha256'], adverts: PROVIDERS.map(advertRow) }) },
  {
    method: 'GET',
    path: '/v1/offers/:job',
    handler: async ({ query }) => {
      offersAsked.push(query.toString());
      // the daemon's own reading of the parameter (a malformed one is its 400)
      const only = parseOffersProviders(query);
      const providers = PROVIDERS.filter((p) => !only || only.has(p)).map((p) => ({ provider: p, eligible: false, failures: [{ code: 'TIER_TOO_LOW', field: 'tier', message: 'x' }] }));
      return { job: JOB, known: true, offers: [], explanation: { summary: '0 of 3 providers are eligible', providers } };
    },
  },
  {
    method: 'POST',
    path: '/v1/console/run',
    handler: async ({ body }, res) => {
      const yaml = String((body as { yaml?: unknown }).yaml ?? '');
      const s = res.stream();
      s.send({ e: 'job', job: { address: JOB } });
      // a job no provider can take (`cpuCores: 64`): the run ends no-eligible-provider, as Buyer.run words it
      if (/cpuCores: 64/.test(yaml)) {
        s.send({ e: 'collected', offers: 1, waitedMs: 3000 });
        s.send({ e: 'decision', policy: 'balanced', decision: NO_ELIGIBLE });
        return { status: 'no-eligible-provider', job: { address: JOB }, attempts: [], decision: NO_ELIGIBLE };
      }
      // its only provider vanished after it was selected
      if (/vanish/.test(yaml)) {
        s.send({ e: 'nondelivery', provider: PROVIDERS[0], reason: 'unreachable' });
        return { status: 'failed', job: { address: JOB }, attempts: [{ provider: PROVIDERS[0], outcome: 'provider unreachable or gone: EXEC_PROVIDER_SILENT' }] };
      }
      // the run begins, then nothing more: a job that takes its time (or a node that stopped)
      return new Promise(() => undefined);
    },
  },
  {
    method: 'POST',
    path: '/v1/harness/emit',
    handler: async () => {
      runs++;
      for (const l of listeners) l({ type: 'job', overlay: 'public', run: runs, ev: { e: 'progress' } });
      return { runs };
    },
  },
  {
    // the node's roles on its overlay (`?roles=provider`: a provider-only node)
    method: 'POST',
    path: '/v1/harness/roles',
    handler: async ({ query }) => {
      overview.overlays[0]!.roles = (query.get('roles') ?? '').split(',').filter(Boolean);
      return { roles: overview.overlays[0]!.roles };
    },
  },
  { method: 'GET', path: '/v1/harness/state', handler: async () => ({ streams: listeners.size, offers: offersAsked }) },
];

const clock = () => Date.now();
const sessions = new ConsoleSessions(clock);
const api = await startApi({
  listen: '127.0.0.1:0',
  token: TOKEN,
  registry: new Registry(),
  log: silentLogger(),
  console: consoleGate({ clock } as unknown as Daemon, sessions, hub, TOKEN, { pingMs: HARNESS_PING_MS }),
  routes: [...routes, { method: 'POST', path: '/v1/console/login', handler: async () => ({ path: `/ui/login?code=${sessions.mintCode().code}` }) }],
});
console.log(JSON.stringify({ api: api.address, token: TOKEN, job: JOB, receipt: RECEIPT, providers: PROVIDERS }));
