/**
 * Node configuration: built-in defaults < config file (YAML) < environment
 * (C0MPUTE_*) < command-line flags, in that order. Validated with zod; every
 * problem is reported as CONFIG_INVALID naming the field.
 */
import { DEFAULT_MAX_EVIDENCE, DEFAULT_MAX_EVIDENCE_BYTES, MIN_MAX_EVIDENCE_BYTES } from '../reputation/bounds.js';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { readRegularFile } from '../util/bounded-read.js';
import { isIPv6 } from 'node:net';
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { isMultiaddr, isPeerAddr } from '../net/addr-text.js';
import { C0Error } from '../errors.js';
import { AMOUNT_RE, CURRENCY_RE } from '../records/money.js';
import { PRESENCE_TARGET_PER_MARKET } from '../matching/presence-rate.js';
import { MAX_PRESENCE_FREE_SLOTS } from '../records/kinds.js';
import { ADVERT_TARGET_PER_MARKET } from '../matching/advert-rate.js';
import { INVITE_ABOVE, OFFER_RANK } from '../matching/candidates.js';
import { REGION_RE, TIERS, WORKLOAD_RE, POLICIES, FEATURE_RE } from '../records/kinds.js';
import { BUILTINS } from '../roles/provider/executors.js';
import { isDid } from '../records/did.js';
import { TOPIC_KINDS } from '../net/topics.js';
import { DEFAULT_HISTORY_KEEP_DAYS } from './history-prune.js';
import { WITNESS_RECORD_DEFAULTS } from '../store/witness-keep.js';
import { QUOTED_JOB_DEFAULTS } from '../store/records.js';
import { TRAIL_KEPT_BYTES, TRAIL_KEPT_ENTRIES } from '../pools/trail.js';
import { ROLE_NAMES, type Role } from './role-names.js';
import { EXEC_MAX_OUTPUT_BYTES, PROVIDER_MAX_INPUT_BYTES } from '../roles/exec-protocol.js';
import { parsePlainYaml, YamlValueError } from '../util/yaml.js';

const money = z.object({ amount: z.string().regex(AMOUNT_RE, 'a plain decimal like "0.042"'), currency: z.string().regex(CURRENCY_RE, 'an upper-case currency code') }).strict();

const executor = z.discriminatedUnion('type', [
  z.object({ type: z.literal('builtin'), name: z.enum(BUILTINS) }).strict(),
  z.object({ type: z.literal('exec'), command: z.array(z.string().min(1)).min(1), env: z.record(z.string(), z.string()).optional(), cwd: z.string().optional() }).strict(),
  z.object({ type: z.literal('http'), url: z.string().url(), headers: z.record(z.string(), z.string()).optional() }).strict(),
]);

const workloadCfg = z
  .object({
    executor,
    /** Price per unit. */
    price: money,
    /** `job`: flat; `second`: per quoted second; `mib`: per MiB of input. */
    unit: z.enum(['job', 'second', 'mib']).default('job'),
    /** Quoted duration model: base + per MiB of input. */
    duration: z.object({ baseMs: z.number().int().positive().default(1000), perInputMiBMs: z.number().int().nonnegative().default(0) }).strict().default({ baseMs: 1000, perInputMiBMs: 0 }),
  })
  .strict();

const gpu = z.object({ model: z.string().min(1).max(64), vramMiB: z.number().int().positive(), features: z.array(z.string().regex(FEATURE_RE)).optional(), count: z.number().int().positive() }).strict();

export { ROLE_NAMES, type Role } from './role-names.js';

const NETWORK_DEFAULTS = { listen: ['/ip4/0.0.0.0/tcp/4001'], announce: [], bootstrap: [], overlay: 'public', loopback: false, clockSkewMs: 30_000, resyncMs: 30_000, outcomes: 'auto' as const, managed: false };

// Flood limits (defaults and meaning: net/flood-limits.ts, net/peer-abuse.ts, net/records-protocol.ts; docs/network.md).
const bucket = z.object({ ratePerSec: z.number().positive(), burst: z.number().positive() }).strict();
const floodLimitsSchema = z
  .object({
    peer: bucket,
    maxInFlightPerPeer: z.number().int().positive(),
    signer: z.partialRecord(z.enum(TOPIC_KINDS as [string, ...string[]]), bucket),
    newAdvertisers: bucket,
    newAdvertisersTotal: bucket,
    abuseHalfLifeMs: z.number().int().positive(),
    abusePerHit: z.number().nonnegative(),
    abusePerInvalid: z.number().nonnegative(),
    maxKeys: z.number().int().positive(),
  })
  .partial()
  .strict();
const abuseSchema = z.object({ appSpecificWeight: z.number().nonnegative(), disconnectAt: z.number().nonnegative(), banMs: z.number().int().nonnegative() }).partial().strict();
const recordsServeSchema = z.object({ maxResponseBytes: z.number().int().positive(), maxResponseRecords: z.number().int().positive(), peer: bucket }).partial().strict();
const recordCacheSchema = z.object({ maxPerKind: z.number().int().positive(), maxBytesPerKind: z.number().int().positive(), maxBytes: z.number().int().positive(), ttlMs: z.number().int().positive() }).partial().strict();

// A multiaddr libp2p can parse (refused at start with CONFIG_INVALID naming the entry, not at listen or dial); a peer to
// join through: a multiaddr, whose `/p2p/<PeerId>` (the documented form) must parse when it is there. Without one the
// node dials the address and learns the PeerId (src/net/connectivity.ts), as it always has. Both in src/net/addr-text.ts.

/** The control API's address: `host:port` or `[IPv6]:port`, the port 0–65535 (0: any free port). */
function isListenAddr(s: string): boolean {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]\s]+)):([0-9]{1,5})$/.exec(s);
  return m !== null && Number(m[3]) <= 65535 && (m[1] === undefined || isIPv6(m[1]));
}

const maddr = z.string().refine(isMultiaddr, 'a multiaddr, e.g. /ip4/0.0.0.0/tcp/4001');

const networkSchema = z
  .object({
    listen: z.array(maddr).default(['/ip4/0.0.0.0/tcp/4001']),
    announce: z.array(maddr).default([]),
    // the /p2p/<PeerId> part is optional (without it the PeerId is learnt at the dial); one that is there must parse
    bootstrap: z.array(z.string().refine(isPeerAddr, 'a multiaddr, e.g. /ip4/203.0.113.7/tcp/4001/p2p/<PeerId> (the /p2p/<PeerId> part is optional; when given, the PeerId must parse)')).default([]),
    overlay: z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/).default('public'),
    /** Private overlay: path to a swarm key file (see `c0mpute overlay create`). */
    swarmKeyFile: z.string().optional(),
    /** Only these DIDs may connect (enforced by the connection gater). */
    allowlist: z.array(z.string().refine(isDid, 'a did:key whose key passes the key check')).optional(),
    /** Allow loopback/private addresses in the DHT, and serve it (devnets, tests, one LAN); a private overlay does both anyway. */
    loopback: z.boolean().default(false),
    clockSkewMs: z.number().int().nonnegative().default(30_000),
    /**
     * Anti-entropy: re-sync live adverts from one random peer this often (ms;
     * 0 = never). Gossip can miss a record that arrived at a neighbour just
     * before this node joined its mesh; a periodic sync repairs that.
     */
    resyncMs: z.number().int().nonnegative().default(30_000),
    /**
     * Markets this node trades in (issue #16, docs/network.md §14): workload names whose topic shards (adverts,
     * jobs, presence, a job's outcome) it joins, relays and syncs, or `all`. Default: a node whose only role is
     * provider, the workloads it serves; any other node, all. A steward joins every market.
     */
    markets: z.union([z.literal('all'), z.array(z.string().min(1).max(128)).min(1)]).optional(),
    /**
     * Whose job outcomes this node hears (docs/network.md §14 "Who hears a job's outcome"): `all` joins the receipt,
     * acceptance and non-delivery topics of its markets; `own` does not (its own outcomes reach it directly); `auto`
     * joins them when the node counts second-hand evidence (reputation.trustedBuyers, an overlay allowlist with
     * reputation.overlayMembers, reputation.dealtWith), is a steward, or is on an overlay with a steward.
     */
    outcomes: z.enum(['auto', 'all', 'own']).default('auto'),
    /** The DID of this overlay's steward (pool/1): buyers ask it to admit their claims; providers run the selections it signs and stop work it preempts. */
    steward: z.string().refine(isDid, 'a did:key whose key passes the key check').optional(),
    /** Managed overlay: the steward signs selections on the buyers' behalf. */
    managed: z.boolean().default(false),
    /**
     * The overlay's witnesses (docs/overlays.md "Witnesses"): only their pool-witness/1 receipts are relayed, kept and
     * counted, and with `steward` set only receipts for that steward. Absent: any key's receipt is kept (a bounded
     * set per key) and a reader weighs who signed.
     */
    witnesses: z.array(z.string().refine(isDid, 'a did:key whose key passes the key check')).min(1).optional(),
    /** Worker threads verifying signatures, one pool per process (net/verify-pool.ts); unset: min(4, cores − 1) above 2 cores, else 0; 0 = on the event loop. */
    verifyThreads: z.number().int().min(0).max(16).optional(),
    /** Flood limits in validation (per peer, per signer and kind, new advertisers); unset keys keep their defaults. */
    floodLimits: floodLimitsSchema.optional(),
    /** What a persistent flooder earns (gossipsub P5 weight, disconnect threshold, ban time). */
    abuse: abuseSchema.optional(),
    /** Bounds on /c0mpute/records/1 answers (per request, per peer byte budget). */
    recordsServe: recordsServeSchema.optional(),
    /** Bounds on the records held in memory to relay and answer syncs with (net/record-cache.ts); unset keys keep its defaults. */
    recordCache: recordCacheSchema.optional(),
    /**
     * Reconnection (docs/network.md "Reconnection and liveness"): bootstrap and
     * remembered peers are redialled forever with capped backoff; below
     * minPeers the DHT is asked for more. Unset keys keep the module's defaults.
     */
    reconnect: z
      .object({
        minPeers: z.number().int().nonnegative().optional(),
        bootstrapMaxBackoffMs: z.number().int().min(100).optional(),
        peerMaxBackoffMs: z.number().int().min(100).optional(),
        rememberPeers: z.number().int().nonnegative().optional(),
        /** Gossip self-check: repair a connected peer detached from gossip this long (ms; 0 = no periodic check). */
        gossipRepairMs: z.number().int().nonnegative().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();


export const configSchema = z
  .object({
    roles: z.array(z.enum(ROLE_NAMES)).default(['buyer']),
    log: z.object({ level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'), format: z.enum(['json', 'pretty']).default('json') }).strict().default({ level: 'info', format: 'json' }),
    network: networkSchema.default(NETWORK_DEFAULTS),
    /**
     * Further overlays this node joins at the same time, each its own libp2p
     * instance (own listen address, own key, own topics and stores). Roles
     * default to the node's roles.
     */
    overlays: z
      .array(
        networkSchema.extend({
          overlay: z.string().regex(/^[a-z0-9][a-z0-9-]{0,31}$/),
          roles: z.array(z.enum(ROLE_NAMES)).optional(),
        }),
      )
      .default([]),
    api: z
      .object({
        /** host:port of the control API (and /metrics). Port 0 picks a free port. */
        listen: z.string().refine(isListenAddr, 'host:port or [IPv6]:port, the port 0–65535').default('127.0.0.1:7070'),
        /** Further names clients may put in `Host` (with the bound port), e.g. the machine's DNS name; see docs/node.md. */
        hosts: z.array(z.string().regex(/^[A-Za-z0-9.-]+(:[0-9]{1,5})?$/, 'host name or host:port')).optional(),
      })
      .strict()
      .default({ listen: '127.0.0.1:7070' }),
    provider: z
      .object({
        tier: z.enum(TIERS).default('community'),
        region: z.string().regex(REGION_RE).optional(),
        advertLifetimeMs: z.number().int().min(10_000).max(24 * 3600_000).default(600_000),
        /** Adverts a second its largest market should carry at most; past it the advert lives longer (docs/scale.md §3; 0: never adapt). */
        advertTargetPerMarket: z.number().min(0).max(1000).default(ADVERT_TARGET_PER_MARKET),
        offerLifetimeMs: z.number().int().min(1000).default(30_000),
        /** Offers per job (docs/market.md "How many offers a job draws"): quote a job heard on gossip only when fewer than this many live providers in view ask less for it (0: quote every job that fits). A job its buyer pushes is always quoted. */
        offerRank: z.number().int().min(0).max(1000).default(OFFER_RANK),
        /** At most what a presence can say (its freeSlots): past it the first presence failed to sign and the daemon stopped, RECORD_FIELD_INVALID naming freeSlots. */
        slots: z.number().int().positive().max(MAX_PRESENCE_FREE_SLOTS).default(1),
        /** Presence (docs/matching.md "Presence"): each record counts as live this long after issuedAt, ms. */
        presenceWindowMs: z.number().int().min(3000).max(600_000).default(45_000),
        /** Presence: publish at least this often, ms (default: a third of presenceWindowMs). */
        presenceEveryMs: z.number().int().min(1000).max(600_000).optional(),
        /** Presence: records a second its largest market should carry at most; past it the interval grows (docs/scale.md §4). */
        // not below the default: peers honour windows as the default target would sign them (×2 slack), so a lower target's longer windows would be cut
        presenceTargetPerMarket: z.number().min(PRESENCE_TARGET_PER_MARKET).max(1000).default(PRESENCE_TARGET_PER_MARKET),
        /** Open orders (docs/matching.md "Open orders, claims and leases"): claim the orders leased to this provider (`leased`) or every order it may claim (`any`). */
        claimMode: z.enum(['leased', 'any']).default('leased'),
        detectGpus: z.boolean().default(true),
        hardware: z.object({ cpuCores: z.number().int().positive().optional(), memoryMiB: z.number().int().positive().optional(), gpus: z.array(gpu).optional() }).strict().optional(),
        meter: z
          .object({
            type: z.enum(['auto', 'rapl', 'nvml', 'estimator']).default('auto'),
            estimatorWatts: z.number().positive().default(100),
            /** Where the RAPL counters are (default /sys/class/powercap; containers may mount them elsewhere); relative to the config file. */
            powercapRoot: z.string().optional(),
          })
          .strict()
          .default({ type: 'auto', estimatorWatts: 100 }),
        /** At most what a buyer takes back (EXEC_MAX_OUTPUT_BYTES, 64 MiB): a larger output could never be delivered. */
        maxOutputBytes: z.number().int().positive().max(EXEC_MAX_OUTPUT_BYTES).default(16 * 1024 * 1024),
        /** At most 1 GiB: the provider holds an input whole in memory, and its byte budget is 4 × (this + 8 MiB). */
        maxInputBytes: z.number().int().positive().max(PROVIDER_MAX_INPUT_BYTES).default(16 * 1024 * 1024),
        /** exec/1: time to deliver the request header, and the base of the input phase (docs/network.md). */
        execRequestMs: z.number().int().min(100).default(30_000),
        /** exec/1: the input must arrive at least this fast on top of execRequestMs. */
        execMinInputBytesPerSec: z.number().int().positive().default(128 * 1024),
        /** The quoting budget (docs/market.md "Quoting budget"): live offers at once, in total and per buyer; offers per buyer per offerLifetimeMs. */
        quoteBudget: z
          .object({ maxLiveOffers: z.number().int().positive().default(256), maxLiveOffersPerBuyer: z.number().int().positive().default(8), maxRecentOffersPerBuyer: z.number().int().positive().default(64) })
          .strict()
          .default({ maxLiveOffers: 256, maxLiveOffersPerBuyer: 8, maxRecentOffersPerBuyer: 64 }),
        workloads: z.record(z.string().regex(WORKLOAD_RE, 'a workload namespace like infer.llm'), workloadCfg).default({}),
      })
      .strict()
      .optional(),
    /** Pooled provider (docs/pools.md): this provider is a member of a pool and signs for it. */
    pool: z
      .object({
        /** The pool's roster envelope (written by `c0mpute pool-provider roster`); relative to the config file. */
        roster: z.string().min(1),
        /** This member's countersignature of that roster (written by `c0mpute pool-provider join`); relative to the config file. */
        membership: z.string().min(1),
        /** Admission gate: refuse jobs paying less (absent: no price gate). */
        minPrice: money.optional(),
        /** Admission gate: refuse inputs larger than this, bytes. */
        maxInputBytes: z.number().int().positive().max(3 * 1024 * 1024).default(512 * 1024),
        /** Admission gate: the params key holding the workload's size (like max_tokens) … */
        sizeParam: z.string().min(1).max(64).default('maxTokens'),
        /** … and its largest admitted value. */
        maxSizeParam: z.number().int().nonnegative().default(8192),
        /** Longest the coordinator waits for a member, ms (besides the job's own timeout). */
        memberTimeoutMs: z.number().int().positive().default(30_000),
        /** Ping the other members this often, ms; unheard for 3× this = not live. */
        livenessMs: z.number().int().min(100).default(2000),
        /** Open dispatches another member may keep in this member's dispatch trail (its coordinated jobs not yet closed); more: POOL_TRAIL_FULL. */
        maxOpenDispatches: z.number().int().positive().max(100_000).default(64),
        /** Dispatches another member may keep in this member's dispatch trail, closed ones included; past it its earliest closed ones go, or POOL_TRAIL_FULL. */
        maxKeptDispatches: z.number().int().positive().max(1_000_000).default(TRAIL_KEPT_ENTRIES),
        /** Bytes of those dispatches' dispatch, job and offer envelopes another member may keep here; likewise. */
        maxKeptBytes: z.number().int().positive().max(64 * 1024 ** 3).default(TRAIL_KEPT_BYTES),
      })
      .strict()
      .optional(),
    steward: z
      .object({
        /** The entitlement tree: YAML with `entitlements: [{id, parent?, guarantee_uj, guarantee_devices, over_quota_weight, limit_uj?, priority, buyers?}]`. */
        treeFile: z.string().min(1),
        /** Sign selections on buyers' behalf (the overlay's `managed` must say so too). */
        managed: z.boolean().default(false),
        /** Evidence needed to derive an estimate from history (pool/1 §2.6; 0 counts as 1). */
        requiredEvidence: z.number().int().nonnegative().default(3),
        /** Reclaim devices from lower-priority claims for a claim queued on held devices (pool/1 §5). */
        preempt: z.boolean().default(true),
        /** How long a queued claim restored after a restart keeps its place while its buyer is away, ms (docs/overlays.md). */
        reaskGraceMs: z.number().int().positive().optional(),
        /** Claims one buyer may have in line at once; a new one past it is refused STEWARD_QUEUE_FULL (docs/overlays.md "A bounded line"). */
        maxQueuedPerBuyer: z.number().int().positive().optional(),
        /** Claims in line at once, every buyer's. */
        maxQueued: z.number().int().positive().optional(),
        /** The overlay's physical capacity in devices, declared: used instead of the providers' adverts (docs/overlays.md "Preemption"). */
        capacity: z.number().int().positive().max(1_000_000).optional(),
        /** The most devices one provider's advert adds to the counted capacity (default 64). */
        maxDevicesPerProvider: z.number().int().positive().max(1_000_000).optional(),
        /**
         * Idle reclamation (pool/1 §2.7). Absent: nothing is ever reclaimed for
         * idleness. There is no default threshold: it must sit above the
         * hardware's idle draw and below its working draw.
         */
        idle: z
          .object({
            /** The window a verdict rests on, ms (no verdict below it). */
            windowMs: z.number().int().positive(),
            /** Idle below this rate, µW (= µJ per second). */
            idleBelowMicrowatts: z.number().int().positive(),
            /** How often to sample the running claims' energy, ms (default: a quarter of the window). */
            sampleMs: z.number().int().positive().optional(),
          })
          .strict()
          .optional(),
      })
      .strict()
      .optional(),
    witness: z
      .object({
        /** Only witness these stewards (default: every steward heard on the overlay). */
        stewards: z.array(z.string().refine(isDid, 'a did:key whose key passes the key check')).optional(),
        /** Without `stewards`: how many stewards this witness takes on at most; heads from further keys are ignored. */
        maxStewards: z.number().int().positive().default(1000),
      })
      .strict()
      .default({ maxStewards: 1000 }),
    /** The node's market view (docs/market.md "The advert cap"). */
    market: z
      .object({
        /** Advert records stored at most (current and superseded); past it the least useful providers are evicted. */
        maxAdverts: z.number().int().positive().default(10_000),
      })
      .strict()
      .default({ maxAdverts: 10_000 }),
    /** The job history (docs/node.md "Job history"). */
    history: z
      .object({
        /** Jobs, and what belongs to them (selections, the offers and claims they weighed, claim refusals), are dropped this many days after the job's deadline (0: kept for ever). */
        keepDays: z.number().min(0).max(36_500).default(DEFAULT_HISTORY_KEEP_DAYS),
        /** Jobs of other nodes a provider quoted on and did not run, kept at most; past it the first quoted goes (src/store/records.ts putQuoted). */
        maxQuotedJobs: z.number().int().min(100).default(QUOTED_JOB_DEFAULTS.maxJobs),
        /** Envelope bytes of those jobs kept at most (at least 1 MiB, above the largest job envelope). */
        maxQuotedJobBytes: z.number().int().min(1024 * 1024).default(QUOTED_JOB_DEFAULTS.maxBytes),
      })
      .strict()
      .default({ keepDays: DEFAULT_HISTORY_KEEP_DAYS, maxQuotedJobs: QUOTED_JOB_DEFAULTS.maxJobs, maxQuotedJobBytes: QUOTED_JOB_DEFAULTS.maxBytes }),
    /**
     * What a node keeps of the witnesses' records, pool-evidence/1 and pool-witness/1 (docs/overlays.md "What a node
     * keeps of witness records"; src/store/records.ts). Anyone can mint both from keys of its own, so they are bounded.
     */
    witnessRecords: z
      .object({
        /** pool-evidence/1 records kept about stewards this node's config does not name; past it the first to arrive goes. Each named steward: this many too, the first kept. */
        maxEvidence: z.number().int().positive().default(WITNESS_RECORD_DEFAULTS.maxEvidence),
        /** pool-witness/1 receipts kept for stewards this node's config does not name; past it the first to arrive goes. */
        maxReceipts: z.number().int().positive().default(WITNESS_RECORD_DEFAULTS.maxReceipts),
        /** Witness keys whose receipts are kept for each named steward (and, without network.witnesses, by a steward's own ledger): the first this many. */
        maxWitnesses: z.number().int().positive().default(WITNESS_RECORD_DEFAULTS.maxWitnesses),
      })
      .strict()
      .default({ ...WITNESS_RECORD_DEFAULTS }),
    buyer: z
      .object({
        policy: z.enum(POLICIES).default('balanced'),
        collectWindowMs: z.number().int().min(100).default(3000),
        /** End collection early once this many offers arrived (0: wait the whole window). */
        enoughOffers: z.number().int().nonnegative().default(0),
        /**
         * End collection early once every provider in this node's view that could win has quoted (docs/node.md
         * "Buyer"): in a market of at most 64 providers, each with a live advert that passes the job's gates has an
         * offer held, and one of the offers is eligible. false: only `enoughOffers` or the window's end close it.
         */
        endWhenAllQuoted: z.boolean().default(true),
        /**
         * Offers per job (docs/market.md "How many offers a job draws"): halfway through the window, with fewer offers
         * than this, push the job to twice as many providers as are missing, of those that have not quoted: half to the best
         * records in view, the rest by record and lowest ask (0: push to every connected provider that fits, as before
         * providers held back).
         */
        offersWanted: z.number().int().min(0).max(64).default(OFFER_RANK),
        /**
         * Jobs by invitation (docs/market.md "Jobs by invitation in a large market"): when more than this many providers
         * in this node's view are candidates for a job, send it directly (job-push/1) to twice `offersWanted` of them (at
         * most 16), chosen as a push is, instead of to its whole market on gossip; still short once every invitation has
         * answered, or halfway through the window, the job goes on gossip too. 0: always gossip. Not for open orders, nor
         * on an overlay with a steward, nor with `offersWanted: 0`.
         */
        inviteAbove: z.number().int().min(0).default(INVITE_ABOVE),
      })
      .strict()
      .default({ policy: 'balanced', collectWindowMs: 3000, enoughOffers: 0, endWhenAllQuoted: true, offersWanted: OFFER_RANK, inviteAbove: INVITE_ABOVE }),
    /**
     * Whose evidence counts in this node's reputation view (docs/market.md
     * "Reputation and its threat model"). First-hand evidence (jobs this node
     * bought) always counts fully; nothing else counts unless listed here.
     */
    reputation: z
      .object({
        /** Buyers whose receipts, verdicts and non-delivery records count second-hand. */
        trustedBuyers: z.array(z.string().refine(isDid, 'a did:key whose key passes the key check')).default([]),
        /** Also trust the members of the overlay's `network.allowlist` (only an overlay with an allowlist has members). */
        overlayMembers: z.boolean().default(true),
        /** Also count buyers this node ran jobs for as a provider (each up to that many outcomes per provider). */
        dealtWith: z.boolean().default(false),
        /** Weight of one second-hand outcome against a first-hand one. */
        secondHandWeight: z.number().gt(0).max(1).default(0.5),
        /**
         * Evidence records kept at most (receipts, acceptances, the offers receipts cite, non-deliveries; docs/market.md
         * "How much evidence a node keeps"). Past it outcomes go whole, the oldest first: second-hand ones first (those
         * that count here last), then this node's own jobs as a provider, then its own jobs as a buyer.
         */
        maxEvidence: z.number().int().min(1_000).default(DEFAULT_MAX_EVIDENCE),
        /**
         * Envelope bytes of evidence kept at most, all records together (at least 4 MiB): a non-delivery carries its
         * proof (up to some 60 KiB), so the count alone does not bound memory. Past it, the same order as maxEvidence.
         */
        maxEvidenceBytes: z.number().int().min(MIN_MAX_EVIDENCE_BYTES).default(DEFAULT_MAX_EVIDENCE_BYTES),
      })
      .strict()
      .default({ trustedBuyers: [], overlayMembers: true, dealtWith: false, secondHandWeight: 0.5, maxEvidence: DEFAULT_MAX_EVIDENCE, maxEvidenceBytes: DEFAULT_MAX_EVIDENCE_BYTES }),
  })
  .strict();

export type NodeConfig = z.infer<typeof configSchema>;
export type NetworkConfig = NodeConfig['network'];
export type OverlayConfig = NodeConfig['overlays'][number];
export type ProviderConfig = NonNullable<NodeConfig['provider']>;
export type WorkloadConfig = ProviderConfig['workloads'][string];

/** What keysAt reads of a schema's definition (zod's own, `_zod.def`). */
interface SchemaDef {
  type: string;
  innerType?: z.core.$ZodType;
  in?: z.core.$ZodType;
  shape?: Record<string, z.core.$ZodType>;
  valueType?: z.core.$ZodType;
  element?: z.core.$ZodType;
}

const defOf = (s: z.core.$ZodType) => s._zod.def as unknown as SchemaDef;

/** `s` without its wrappers (a default, optional, nullable or piped schema's inner one). */
function bare(s: z.core.$ZodType): z.core.$ZodType {
  let d = defOf(s);
  while (d.innerType ?? (d.type === 'pipe' ? d.in : undefined)) {
    s = (d.innerType ?? d.in)!;
    d = defOf(s);
  }
  return s;
}

/** The keys the mapping at `path` takes in `schema` (none when it is not a mapping of known keys). */
function keysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let s: z.core.$ZodType | undefined = schema;
  for (const k of path) {
    const d = defOf(bare(s));
    s = d.type === 'object' ? d.shape?.[String(k)] : d.type === 'record' ? d.valueType : d.type === 'array' ? d.element : undefined;
    if (!s) return [];
  }
  return Object.keys(defOf(bare(s)).shape ?? {});
}

/**
 * An unknown key's message, with the key meant when one is near it (a typo, a key spelt another way): did you mean …?
 * `schema`: the one the input was read against (the config's, a job file's, a job spec's), whose keys are offered.
 */
function unknownKeysText(i: z.core.$ZodIssueUnrecognizedKeys, schema: z.core.$ZodType): string {
  const known = keysAt(schema, i.path);
  const hints = i.keys.flatMap((k) => {
    const near = known.filter((x) => x !== k && editDistance(k.toLowerCase(), x.toLowerCase()) <= Math.max(2, Math.floor(k.length / 3))).sort((a, b) => editDistance(k, a) - editDistance(k, b))[0];
    return near ? [`"${k}": did you mean "${near}"?`] : [];
  });
  return hints.length ? `${i.message} (${hints.join('; ')})` : i.message;
}

/**
 * Turn zod issues into one CONFIG_INVALID naming the first field. `schema`: the one `err` came from (the config's by
 * default), whose keys an unknown key's hint offers (review s57: a job file's `provider:` was asked "did you mean
 * provider?", the config's key).
 */
export function configError(err: z.ZodError, source: string, schema: z.core.$ZodType = configSchema): C0Error {
  // a record's key refused by its own schema (a workload name without a dot) says why: zod's own message is only
  // "Invalid key in record" (review s43 R6 F5), its key schema's message is in the inner issues; an unknown key names
  // the key meant when one is near it
  const why = (i: z.core.$ZodIssue) => (i.code === 'invalid_key' && i.issues.length ? `not a valid key: ${i.issues.map((x) => x.message).join('; ')}` : i.code === 'unrecognized_keys' ? unknownKeysText(i, schema) : i.message);
  const issues = err.issues.map((i) => `${i.path.join('.') || '(top)'}: ${why(i)}`);
  const first = err.issues[0];
  return new C0Error('CONFIG_INVALID', `${source}: ${issues.slice(0, 5).join('; ')}${issues.length > 5 ? ` (+${issues.length - 5} more)` : ''}`, {
    field: first ? first.path.join('.') : '',
    detail: { issues },
  });
}

/**
 * The networks a node runs: `network` with the node's roles, then each
 * `overlays` entry with its own `roles`, or the node's when it names none.
 * Refuses an overlay named twice, and a steward on more than one (its ledger
 * is one hash chain).
 */
export function networksOf(config: NodeConfig, source = 'config'): Array<NetworkConfig & { roles: Role[] }> {
  const networks = [{ ...config.network, roles: config.roles }, ...config.overlays.map((o) => ({ ...o, roles: o.roles ?? config.roles }))];
  if (networks.filter((n) => n.roles.includes('steward')).length > 1) {
    throw new C0Error('CONFIG_INVALID', `${source}: overlays: a node is the steward of at most one overlay (its ledger is one hash chain)`, { field: 'overlays' });
  }
  const names = new Set<string>();
  for (const n of networks) {
    if (names.has(n.overlay)) throw new C0Error('CONFIG_INVALID', `${source}: overlays: overlay "${n.overlay}" is configured twice`, { field: 'overlays' });
    names.add(n.overlay);
  }
  return networks;
}

/**
 * What a role needs of the config that the schema cannot say (a section is optional until a role reads it): the
 * provider a `provider` section with a workload, the steward a `steward` section. Undefined when `config` has it.
 * The role's setup refuses with this, and so does `start` before anything opens (checkRoleSections).
 */
export function roleSectionProblem(role: Role, config: NodeConfig): C0Error | undefined {
  if (role === 'provider') {
    if (!config.provider) return new C0Error('CONFIG_INVALID', 'the provider role needs a `provider` section in the config', { field: 'provider' });
    if (Object.keys(config.provider.workloads).length === 0) return new C0Error('CONFIG_INVALID', 'the provider role needs at least one workload under provider.workloads', { field: 'provider.workloads' });
  }
  if (role === 'steward' && !config.steward) return new C0Error('CONFIG_INVALID', 'the steward role needs a `steward` section with treeFile', { field: 'steward' });
  return undefined;
}

/**
 * Every role a network of `config` runs has its section (roleSectionProblem): `start` asks before the store opens and
 * the network starts. Before (review s43 R6 F6), `start --role provider` with no provider section failed only in the
 * role's setup, ~7 s later, after dialling bootstrap peers.
 */
export function checkRoleSections(config: NodeConfig, source = 'config'): void {
  const roles = new Set(networksOf(config, source).flatMap((n) => n.roles));
  // no role anywhere: a node that buys, sells, witnesses and stewards nothing, which a list rendered empty (a template,
  // a variable) gives far more often than intent; before (QA qaOps F8) it started without a word, its banner blank
  if (roles.size === 0) {
    throw new C0Error('CONFIG_INVALID', `${source}: roles: empty (and no overlay names a role of its own): this node would run no role at all; name at least one (${ROLE_NAMES.join(', ')}; the default is buyer, which publishes nothing until asked to run a job)`, { field: 'roles' });
  }
  for (const role of roles) {
    const e = roleSectionProblem(role, config);
    if (e) throw new C0Error(e.code, `${source}: ${e.message}`, e.field === undefined ? {} : { field: e.field });
  }
}

export function parseConfig(raw: unknown, source = 'config'): NodeConfig {
  const r = configSchema.safeParse(raw ?? {});
  if (!r.success) throw configError(r.error, source);
  networksOf(r.data, source);
  for (const [field, n] of [['network', r.data.network] as const, ...r.data.overlays.map((o, i) => [`overlays.${i}`, o] as const)]) {
    // `public` is the open network, with no key and the stores it has always had: a key under that name would make a
    // private overlay that shares them (records of the open network served to members, and members' records kept as
    // the open network's)
    if (n.overlay === 'public' && n.swarmKeyFile !== undefined) {
      throw new C0Error('CONFIG_INVALID', `${source}: ${field}.overlay: a private overlay (${field}.swarmKeyFile) needs its own name; "public" is the open network, which has no key`, { field: `${field}.overlay` });
    }
    // pool/1 §6.7: a witness holds a key the steward does not
    if (n.steward !== undefined && n.witnesses?.includes(n.steward)) {
      throw new C0Error('CONFIG_INVALID', `${source}: ${field}.witnesses: names the steward ${n.steward}; a witness must hold a key the steward does not (pool/1 §6.7)`, { field: `${field}.witnesses` });
    }
  }
  return r.data;
}

/**
 * The most a config file may hold: the largest config in use is a few KiB, and a bigger one is no config (a log, an
 * image) the node would read whole into memory before saying so.
 */
export const CONFIG_MAX_BYTES = 1024 * 1024;

/**
 * A config file's settings. Read with util/bounded-read.ts: only a regular file (a link to one counts) of at most
 * CONFIG_MAX_BYTES, opened without blocking. Before (review s40 F6): a FIFO with no writer hung the start for ever,
 * /dev/zero was read until the process was killed, and a 600 MB file took seconds and a GiB of memory to refuse.
 */
export function readConfigFile(path: string): unknown {
  let text: string;
  try {
    const r = readRegularFile(path, CONFIG_MAX_BYTES);
    if ('problem' in r) {
      throw new C0Error(
        'CONFIG_UNREADABLE',
        r.problem === 'not-regular'
          ? `cannot read config ${path}: not a regular file (a directory, a FIFO or a device); a config is a YAML file`
          : `cannot read config ${path}: larger than ${CONFIG_MAX_BYTES} bytes, which no config is`,
      );
    }
    text = Buffer.from(r.bytes).toString('utf8');
  } catch (e) {
    if (e instanceof C0Error) throw e;
    throw new C0Error('CONFIG_UNREADABLE', `cannot read config ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? missingWhy(path) : (e as Error).message}`);
  }
  try {
    return parsePlainYaml(text) ?? {};
  } catch (e) {
    // a tagged value (!!binary, !!set, …) or an unknown tag: valid YAML, but no setting takes it
    if (e instanceof YamlValueError) throw new C0Error('CONFIG_INVALID', `${path}: ${e.message}`, { field: e.path });
    throw new C0Error('CONFIG_NOT_YAML', `${path} is not valid YAML: ${(e as Error).message}`);
  }
}

/** Why a config path that was not found is not there: a link to nothing (a mount not ready yet) says where it points. */
function missingWhy(path: string): string {
  try {
    if (lstatSync(path).isSymbolicLink()) return `it is a link to ${readlinkSync(path)}, which does not exist (not mounted yet?)`;
  } catch {
    // no entry at all
  }
  return 'no such file';
}

/**
 * Every C0MPUTE_* variable c0mpute reads, in one place: a variable set with any other C0MPUTE_ name is a typo said at
 * start (envWarnings), never silently ignored. test/unit/node/config-warnings.test.ts checks src/ reads no other.
 */
export const ENV_VARS = [
  // config overrides (envOverrides)
  'C0MPUTE_ROLES', 'C0MPUTE_LISTEN', 'C0MPUTE_ANNOUNCE', 'C0MPUTE_BOOTSTRAP', 'C0MPUTE_OVERLAY', 'C0MPUTE_API', 'C0MPUTE_LOG_LEVEL', 'C0MPUTE_LOG_FORMAT',
  // the CLI's own
  'C0MPUTE_HOME', 'C0MPUTE_API_TIMEOUT', 'C0MPUTE_PASSPHRASE', 'C0MPUTE_PASSPHRASE_FILE', 'C0MPUTE_DEBUG', 'C0MPUTE_FAILPOINT',
  // read by bin/c0mpute.js: 0 runs dist/src instead of the bundle (docs/build.md)
  'C0MPUTE_BUNDLE',
  // set for an exec workload's command (its params), never read by the node
  'C0MPUTE_PARAMS',
] as const;

/** Variables the test suite sets and reads (C0MPUTE_TEST*, C0MPUTE_KEEP_TEST_DIRS): never warned about. */
const TEST_ENV_RE = /^C0MPUTE_(TEST|KEEP_TEST)/;

/** Something in the config or the environment that starts, but is likely not what was meant (logged at warn at start). */
export interface ConfigWarning {
  code: 'CONFIG_ENV_UNKNOWN' | 'CONFIG_SECTION_UNREAD' | 'CONFIG_EMPTY';
  field: string;
  message: string;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/** A C0MPUTE_* variable that is set but that c0mpute does not read (a typo: C0MPUTE_ROLE), with the nearest it does. */
export function envWarnings(env: NodeJS.ProcessEnv): ConfigWarning[] {
  const known = ENV_VARS as readonly string[];
  const out: ConfigWarning[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('C0MPUTE_') || known.includes(name) || TEST_ENV_RE.test(name) || env[name] === undefined) continue;
    const nearest = [...known].sort((a, b) => editDistance(name, a) - editDistance(name, b))[0]!;
    out.push({ code: 'CONFIG_ENV_UNKNOWN', field: name, message: `the environment sets ${name}, which c0mpute does not read (did you mean ${nearest}?); it is ignored` });
  }
  return out;
}

/**
 * The config sections only a role reads, and the keys of one read without it. `witness.stewards` names stewards whose
 * witness records every node keeps outside the caps (docs/config.md), so only the rest of `witness` needs the role.
 */
const SECTION_ROLES: ReadonlyArray<{ section: string; role: Role; readAnyway?: readonly string[] }> = [
  { section: 'provider', role: 'provider' },
  { section: 'pool', role: 'provider' },
  { section: 'steward', role: 'steward' },
  { section: 'witness', role: 'witness', readAnyway: ['stewards'] },
];

/**
 * The sections the merged config layers set that no configured role reads, on `network` or any overlay (a provider
 * section with the provider role only on an overlay is read): one warning naming them all, or none.
 */
export function sectionWarnings(raw: unknown, config: NodeConfig): ConfigWarning[] {
  if (!isObj(raw)) return [];
  const roles = new Set(networksOf(config).flatMap((n) => n.roles));
  const fields: string[] = [];
  const said: string[] = [];
  for (const { section, role, readAnyway = [] } of SECTION_ROLES) {
    const v = raw[section];
    if (v === undefined || v === null || roles.has(role)) continue;
    const keys = isObj(v) && readAnyway.length ? Object.keys(v).filter((k) => !readAnyway.includes(k)).map((k) => `${section}.${k}`) : [section];
    if (keys.length === 0) continue;
    fields.push(...keys);
    said.push(`${keys.join(', ')} (read only with the ${role} role)`);
  }
  if (fields.length === 0) return [];
  return [{
    code: 'CONFIG_SECTION_UNREAD',
    field: fields.join(','),
    message: `the config sets ${said.join('; ')}, but no overlay of this node runs that role (roles: ${[...roles].join(', ') || 'none'}): ignored; add the role to roles (or an overlay's roles) to use it`,
  }];
}

/** Environment overrides (documented in docs/config.md). */
export function envOverrides(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  const set = (path: string[], v: unknown) => {
    let cur = o;
    for (const p of path.slice(0, -1)) cur = (cur[p] ??= {}) as Record<string, unknown>;
    cur[path.at(-1)!] = v;
  };
  const list = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);
  // a list variable of blanks and commas only (`C0MPUTE_ROLES=" "`) is as an empty one, unset: before (QA qaOps F8) it
  // set the empty list, so " " turned a provider into a node with no role while "" changed nothing
  const setList = (path: string[], v: string | undefined) => {
    const items = v ? list(v) : [];
    if (items.length) set(path, items);
  };
  setList(['roles'], env.C0MPUTE_ROLES);
  setList(['network', 'listen'], env.C0MPUTE_LISTEN);
  setList(['network', 'announce'], env.C0MPUTE_ANNOUNCE);
  setList(['network', 'bootstrap'], env.C0MPUTE_BOOTSTRAP);
  if (env.C0MPUTE_OVERLAY) set(['network', 'overlay'], env.C0MPUTE_OVERLAY);
  if (env.C0MPUTE_API) set(['api', 'listen'], env.C0MPUTE_API);
  if (env.C0MPUTE_LOG_LEVEL) set(['log', 'level'], env.C0MPUTE_LOG_LEVEL);
  if (env.C0MPUTE_LOG_FORMAT) set(['log', 'format'], env.C0MPUTE_LOG_FORMAT);
  return o;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Deep merge: objects merge, everything else (arrays included) replaces. Each key is defined as an own property, never
 * assigned: a file's `__proto__:` key (YAML gives it as an own key) assigned would set the merged object's prototype,
 * so the schema's unknown-key check never saw it and a mapping there read as top-level settings.
 */
export function mergeLayers(...layers: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const l of layers) {
    if (!isObj(l)) continue;
    for (const [k, v] of Object.entries(l)) {
      if (v === undefined) continue;
      const prev = Object.prototype.hasOwnProperty.call(out, k) ? out[k] : undefined;
      Object.defineProperty(out, k, { value: isObj(v) && isObj(prev) ? mergeLayers(prev, v) : v, enumerable: true, writable: true, configurable: true });
    }
  }
  return out;
}

export interface LoadOptions {
  file?: string;
  env?: NodeJS.ProcessEnv;
  flags?: Record<string, unknown>;
  /** Filled with what starts but is likely not what was meant (envWarnings, sectionWarnings), for the caller to log. */
  warnings?: ConfigWarning[];
}

export function loadConfig(opts: LoadOptions = {}): NodeConfig {
  const fileLayer = opts.file ? readConfigFile(opts.file) : {};
  // mergeLayers skips a non-mapping layer, so a file that is a list or a scalar would silently mean "all defaults".
  if (!isObj(fileLayer)) throw new C0Error('CONFIG_INVALID', `${opts.file}: the top level must be a mapping of settings`, { field: '' });
  if (opts.file) resolveFilePaths(fileLayer, dirname(resolve(opts.file)));
  // an empty file (or comments only) means every built-in default: a node whose config lost its content (a truncated
  // copy) starts as a buyer on 0.0.0.0:4001, which is said rather than silent
  const empty = opts.file !== undefined && Object.keys(fileLayer).length === 0;
  const env = envOverrides(opts.env ?? {});
  const flags = opts.flags ?? {};
  const merged = mergeLayers(fileLayer, env, flags);
  try {
    const config = parseConfig(merged, opts.file ?? 'config');
    if (empty) opts.warnings?.push({ code: 'CONFIG_EMPTY', field: '', message: `${opts.file} sets nothing: the node runs on the built-in defaults (roles ${config.roles.join(', ')}, listening on ${config.network.listen.join(', ')}, API on ${config.api.listen})` });
    opts.warnings?.push(...envWarnings(opts.env ?? {}), ...sectionWarnings(merged, config));
    return config;
  } catch (e) {
    // a bad value named where it came from: the command line or the environment override the file
    if (!(e instanceof C0Error) || e.code !== 'CONFIG_INVALID' || !e.field) throw e;
    const path = e.field.split('.');
    const from = layerSets(flags, path) ? 'the command line' : layerSets(env, path) ? 'the environment (C0MPUTE_*)' : undefined;
    if (from === undefined) throw e;
    const source = `${opts.file ?? 'config'}: `;
    const message = e.message.startsWith(source) ? `${from}: ${e.message.slice(source.length)}` : e.message;
    throw new C0Error('CONFIG_INVALID', message, { field: e.field, ...(e.detail === undefined ? {} : { detail: e.detail }) });
  }
}

/**
 * The files a config file names (a swarm key, a steward's tree, a pool member's roster and membership, the RAPL
 * counters' root), relative to that file's directory, as its examples read (`swarmKeyFile: overlay.key` beside
 * config.yaml), not to wherever the daemon was started: one config starts the same from a shell in the data directory,
 * a systemd unit or a container's WORKDIR. (An exec executor's `cwd` is the directory the daemon starts in, as
 * documented.)
 */
function resolveFilePaths(layer: Record<string, unknown>, base: string): void {
  const fix = (o: unknown, key: string) => {
    if (isObj(o) && typeof o[key] === 'string' && o[key] !== '' && !isAbsolute(o[key])) o[key] = resolve(base, o[key]);
  };
  fix(layer.network, 'swarmKeyFile');
  if (Array.isArray(layer.overlays)) for (const o of layer.overlays) fix(o, 'swarmKeyFile');
  fix(layer.steward, 'treeFile');
  // Read from the daemon's working directory before this version: a path found only there is still taken from there,
  // so a member configured and started as it was before keeps starting (docs/config.md).
  const fixOrCwd = (o: unknown, key: string) => {
    if (!isObj(o) || typeof o[key] !== 'string' || o[key] === '' || isAbsolute(o[key])) return;
    const beside = resolve(base, o[key]);
    o[key] = !existsSync(beside) && existsSync(resolve(o[key])) ? resolve(o[key]) : beside;
  };
  fixOrCwd(layer.pool, 'roster');
  fixOrCwd(layer.pool, 'membership');
  if (isObj(layer.provider)) fixOrCwd(layer.provider.meter, 'powercapRoot');
}

/**
 * Whether a layer (the flags', the environment's) sets the value at `path`, or a list or value on the way to it (an
 * array replaces whole): what a config error at that path is blamed on. A mapping there is not the layer's alone
 * (mappings merge, and the file's keys stay in it): an error at a mapping's own path, an unknown key in it above all
 * (zod's path for it is the mapping), is the file's. Before (QA qaOps F3) any `--listen` made a `lisen:` the file had
 * under `network` "the command line"'s, exit 2.
 */
export function layerSets(layer: unknown, path: string[]): boolean {
  let v = layer;
  for (const k of path) {
    if (!isObj(v)) return true;
    if (!Object.hasOwn(v, k)) return false;
    v = v[k];
  }
  return !isObj(v);
}
