/**
 * Shared helpers for the steward end-to-end tests: an organisation on a
 * private overlay as real `c0mpute start` processes on 127.0.0.1 (a swarm key,
 * a steward holding a pool/1 entitlement tree, a witness, providers and
 * buyers), modelled on the devnet's organisation scenario
 * (src/devnet/overlay-scenario.ts).
 *
 *   const org = await startOrg('scenario', { providers: 2, buyers: ['alpha', 'beta'] });
 *   const run = await runClaim(org.buyers.alpha!, claimSpec('A1', 'team-a', 100_000_000, 200_000));
 *   const s = await stewardStatus(org.steward);
 *   await org.restartSteward();           // same port, same data dir; it dials everyone back
 *   await org.c.destroy();                // in an after hook
 */
import type { LedgerEntry } from '../../src/ledger/entry.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateSwarmKey } from '../../src/net/node.js';
import { worseGrade, type Grade } from '../../src/pool/grades.js';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, freePort, get, providerConfig, runJob, waitFor, type CliResult, type NodeProc, type PeerView, type RunOutcome, type StatusView } from './node-helpers.js';

export const OVERLAY = 'acme';

/** The devnet's tree: team-a 600 J / 1 device (priority 2), team-b 300 J / 1 device (priority 1). */
export const TREE_YAML = `# pool/1 entitlement tree (energies in µJ)
entitlements:
  - { id: acme, guarantee_uj: 2000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
  - { id: team-a, parent: acme, guarantee_uj: 600000000, guarantee_devices: 1, over_quota_weight: 1, priority: 2 }
  - { id: team-b, parent: acme, guarantee_uj: 300000000, guarantee_devices: 1, over_quota_weight: 1, priority: 1 }
`;

export interface TeamView {
  id: string;
  parent?: string;
  priority: number;
  guarantee_uj: number;
  guarantee_devices: number;
  used_uj: number;
  spent_uj: number;
  reserved_uj: number;
  borrowed_uj: number;
  held_devices: number;
  open_claims: number;
}

export interface ReceiptStatusView {
  status: string;
  code?: string;
  witness?: string;
  length?: number;
  head?: string;
  ours?: string;
}

export interface AttestationView {
  grade: 'self-attested' | 'witnessed';
  witnesses: Array<{ witness: string; length: number }>;
  witnessedLength: number;
  receipts: ReceiptStatusView[];
}

export interface StewardView {
  steward: string;
  overlay: string;
  ledger: { length: number; head: string };
  teams: TeamView[];
  queued: Array<{ claim: string; entitlement: string; reason: string; reasons: string[] }>;
  attestation: AttestationView;
  /** equivocation evidence about this steward the node holds (absent: none) */
  evidence?: { pairs: number; witnesses: number; seqs: number[] };
}

export interface WitnessView {
  witness: string;
  // `last` only once something happened to the steward since the witness started
  stewards: Record<string, { held: { length: number; head: string }; last?: { length?: number; head?: string; refused?: string }; evidence: number }>;
}

export interface LedgerRow {
  seq: number;
  address: string;
  /** as `c0mpute ledger show --json` prints it: the entry's fields, addresses as sha256:<hex> */
  entry: LedgerEntry;
}

export interface Org {
  c: Cluster;
  keyFile: string;
  treeFile: string;
  steward: NodeProc;
  witness: NodeProc;
  providers: NodeProc[];
  buyers: Record<string, NodeProc>;
  /** `<steward data dir>/steward/<overlay>/ledger` */
  ledgerDir: string;
  /** SIGTERM the steward, start it again on the same data dir and port, dialling every other member; wait until it has them all as peers. */
  restartSteward(): Promise<NodeProc>;
  /** Every member but the steward. */
  others(): NodeProc[];
}

export interface OrgOptions {
  providers: number;
  buyers: string[];
  tree?: string;
  /** Quoted duration of builtin.sha256 on the providers. */
  baseMs?: number;
  /** Change each provider's config (e.g. add a workload). */
  provider?: (cfg: Record<string, unknown>) => Record<string, unknown>;
  /** Every member names the org's witness in `network.witnesses` (docs/overlays.md "Witnesses"). */
  namedWitness?: boolean;
}

/**
 * A provider whose estimator meter charges `watts`: its receipts' energy is
 * watts × wall time, so a low figure keeps a slow run on a loaded machine
 * inside the teams' guarantees (the tests assert admission verdicts, not timing).
 */
function lowPower(cfg: Record<string, unknown>, watts: number): Record<string, unknown> {
  const provider = cfg.provider as Record<string, unknown>;
  return { ...cfg, provider: { ...provider, meter: { type: 'estimator', estimatorWatts: watts } } };
}

/** The `network` section of a member: the overlay, its key, the steward's DID (and the witnesses it names). */
function overlayNetwork(keyFile: string, steward: string, listen: string, bootstrap: string[], witnesses?: string[]): Record<string, unknown> {
  return { overlay: OVERLAY, swarmKeyFile: keyFile, listen: [listen], loopback: true, bootstrap, steward, resyncMs: 5000, ...(witnesses ? { witnesses } : {}) };
}

export async function startOrg(label: string, o: OrgOptions): Promise<Org> {
  const c = new Cluster(label);
  try {
    const keyFile = join(c.root, `${OVERLAY}.key`);
    writeFileSync(keyFile, generateSwarmKey(), { mode: 0o600 });
    const treeFile = join(c.root, 'tree.yaml');
    writeFileSync(treeFile, o.tree ?? TREE_YAML);
    const stewardDid = c.dataDir('steward').did;
    const witnesses = o.namedWitness ? [c.dataDir('witness').did] : undefined;
    // A fixed port: the members dial it back after it restarts.
    const stewardPort = await freePort();
    const stewardConfig = (bootstrap: string[]) => ({
      roles: ['steward'],
      log: { level: 'info', format: 'json' },
      network: overlayNetwork(keyFile, stewardDid, `/ip4/127.0.0.1/tcp/${stewardPort}`, bootstrap, witnesses),
      api: { listen: '127.0.0.1:0' },
      steward: { treeFile },
    });
    const steward = await c.start('steward', stewardConfig([]));
    const net = (cfg: Record<string, unknown>, boot: NodeProc[]) => ({ ...cfg, network: overlayNetwork(keyFile, stewardDid, '/ip4/127.0.0.1/tcp/0', boot.map(bootstrapAddr), witnesses) });
    const [witness, ...providers] = await Promise.all([
      c.start('witness', net({ roles: ['witness'], log: { level: 'info', format: 'json' }, api: { listen: '127.0.0.1:0' } }, [steward])),
      ...Array.from({ length: o.providers }, (_, i) => c.start(`p${i + 1}`, net((o.provider ?? ((x) => x))(lowPower(providerConfig({ price: (0.002 + 0.001 * i).toFixed(3), tier: 'private', baseMs: o.baseMs ?? 4000, slots: 2 }), 5 + i)), [steward]))),
    ]);
    // Buyers dial the providers directly too: a job reaches every provider at once, not through a mesh still forming.
    const started = await Promise.all(o.buyers.map((b) => c.start(b, net(buyerConfig({ collectWindowMs: 5000, enoughOffers: o.providers }), [steward, ...providers]))));
    const buyers = Object.fromEntries(o.buyers.map((b, i) => [b, started[i]!]));
    const org: Org = {
      c,
      keyFile,
      treeFile,
      steward,
      witness,
      providers,
      buyers,
      ledgerDir: join(steward.dir, 'steward', OVERLAY, 'ledger'),
      others: () => [org.witness, ...org.providers, ...Object.values(org.buyers)],
      restartSteward: async () => {
        const others = org.others();
        org.steward = await c.restart(org.steward, stewardConfig(others.map(bootstrapAddr)));
        // a member can stay out of the restarted steward's mesh for good while both meshes are formed (waitForPeers)
        await waitForPeers(org.steward, others.map((n) => n.did), 'mesh', 90_000, others);
        return org.steward;
      },
    };
    // Every buyer sees every provider's advert and holds it and the steward as peers; the steward holds every member.
    for (const b of Object.values(buyers)) {
      await waitFor(`${b.name} to see ${o.providers} providers`, async () => (await get<{ providersKnown: number }>(b, '/v1/status')).providersKnown >= o.providers, 45_000);
      await waitForPeers(b, [steward.did, ...providers.map((p) => p.did)], 'subscribed');
    }
    await waitForPeers(steward, org.others().map((n) => n.did), 'mesh', 45_000, org.others());
    return org;
  } catch (e) {
    c.dumpLogs();
    // the set-up's own error is the one to see: a clean-up that fails too (a directory still being written) is not
    await c.destroy().catch((d: Error) => console.error(`clean-up after the failed set-up failed too: ${d.message}`));
    throw e;
  }
}

/**
 * gossipsub's Dlo at its default degree (D 6): a node grafts more peers into a topic's mesh only while it has fewer
 * than this many there, so with this many a peer heard subscribed can stay out of its mesh for good.
 */
const GOSSIP_DLO = 4;

/** Whether `n`'s gossip mesh is formed: of each kind of its topics, as many peers in its mesh as gossipsub keeps (Dlo), or every peer it heard subscribed. */
async function meshFormed(n: NodeProc): Promise<{ formed: boolean; kinds: string }> {
  const g = (await get<StatusView>(n, '/v1/status')).gossip;
  const kinds = Object.entries(g).filter((e): e is [string, { peers: number; mesh: number }] => e[1] !== undefined);
  return { formed: kinds.every(([, k]) => k.mesh >= Math.min(GOSSIP_DLO, k.peers)), kinds: kinds.map(([k, v]) => `${k} ${v.mesh}/${v.peers}`).join(' ') };
}

/**
 * Wait until `n` holds every DID in `dids` as a peer whose gossip subscriptions it heard (what `n` publishes reaches
 * it at once), and with `until` 'mesh' (the default) linked to it by gossip's mesh too: what one of them publishes,
 * `n` relays to the others (a hub's records go by its mesh). docs/node.md "Is the mesh formed?".
 * A peer is linked when it is in `n`'s mesh, or when both meshes are formed without each other (each node holds
 * gossipsub's Dlo peers of each kind, or all it has: neither grafts more, and records go round through the others;
 * `dids` of nodes not in `nodes` must be in `n`'s mesh). Waiting for each peer in `n`'s mesh instead flaked in about
 * 1 of 10 restarts of a steward with 5 peers (1 of 37 restarts in a loop here). The failure seen with both sides'
 * view showed both gossip streams, no prune backoff, positive scores and each subscribed to the other's topics, and
 * neither in the other's mesh: what gossipsub does when the 4 subscriptions the steward heard first fill its meshes
 * at its first heartbeat (it grafts only below Dlo) and the fifth peer's own meshes already hold 4 others.
 */
export async function waitForPeers(n: NodeProc, dids: string[], until: 'mesh' | 'subscribed' = 'mesh', timeoutMs = 45_000, nodes: NodeProc[] = []): Promise<void> {
  await waitFor(`${n.name} to hold ${dids.length} peers (${until})`, async () => {
    const p = await get<{ peers: PeerView[] }>(n, '/v1/peers');
    const have = new Map(p.peers.map((x) => [x.did, x]));
    const missing = dids.filter((d) => !have.get(d)?.topics.length);
    const mine = until === 'mesh' ? await meshFormed(n) : undefined;
    if (!missing.length && until === 'mesh') {
      for (const d of dids) {
        if (have.get(d)?.mesh.length) continue;
        const q = nodes.find((m) => m.did === d);
        if (!mine!.formed || !q || !(await meshFormed(q)).formed) missing.push(d);
      }
    }
    if (!missing.length) return true;
    // thrown, not returned: waitFor's timeout names the last error, so a failure says who was missing and how, seen
    // from both sides when the missing peer is one of `nodes`
    const parts: string[] = mine ? [`${n.name} meshes ${mine.kinds}`] : [];
    for (const d of missing) {
      const x = have.get(d);
      const link = (v: PeerView) => `${v.streams ? `out=${v.streams.out} in=${v.streams.in}` : 'no-router'} backoffMs=${v.backoffMs ?? '-'}`;
      const here = x ? `topics=[${x.topics.join(',')}] mesh=[${x.mesh.join(',')}] score=${x.score} ${link(x)}` : 'not connected';
      const q = nodes.find((m) => m.did === d);
      const back = q ? (await get<{ peers: PeerView[] }>(q, '/v1/peers').catch(() => ({ peers: [] as PeerView[] }))).peers.find((y) => y.did === n.did) : undefined;
      const theirs = q ? await meshFormed(q).catch(() => undefined) : undefined;
      const there = q ? (back ? `; ${q.name} has ${n.name}: topics=[${back.topics.join(',')}] mesh=[${back.mesh.join(',')}] score=${back.score} ${link(back)}; ${q.name} meshes ${theirs?.kinds ?? '?'}` : `; ${q.name} does not list ${n.name}`) : '';
      parts.push(`${d.slice(-8)} ${here}${there}`);
    }
    throw new Error(`not yet: ${parts.join(' | ')}`);
  }, timeoutMs);
}

/** A builtin.sha256 job naming an entitlement and an energy estimate (pool/1 §2.4). */
export function claimSpec(label: string, entitlement: string, uj: number, rounds: number, grade: Grade = 'Estimator', deadlineMs = 60_000): Record<string, unknown> {
  return {
    workload: 'builtin.sha256',
    params: String(rounds),
    maxPrice: { amount: '0.01', currency: 'USD' },
    deadlineMs,
    entitlement,
    class: 'sha256-batch',
    energy: { uj, grade },
    input: Buffer.from(`${label} ${Date.now()} ${Math.random()}`).toString('base64'),
  };
}

export interface ClaimRun extends RunOutcome {
  job: string;
  admission?: { verdict: string; reason?: string; reasons?: string[]; reserved?: { uj: number; grade: Grade }; borrowed_uj?: number; entry?: string };
  queued: Array<{ reason: string; reasons: string[] }>;
  /** Every receipt the buyer received for the job, summed (µJ) at the worst grade. */
  energy?: { uj: number; grade: Grade };
}

export async function runClaim(n: NodeProc, spec: Record<string, unknown>): Promise<ClaimRun> {
  const r = await runJob(n, spec);
  const receipts = r.events.filter((e) => e.e === 'receipt').map((e) => (e.receipt as { record: { energy: { uj: number; grade: Grade } } }).record.energy);
  const energy = receipts.length ? receipts.slice(1).reduce((a, x) => ({ uj: a.uj + x.uj, grade: worseGrade(a.grade, x.grade) }), { ...receipts[0]! }) : undefined;
  return {
    ...r,
    job: (r.result.job as { address: string }).address,
    ...(r.result.admission ? { admission: r.result.admission as ClaimRun['admission'] } : {}),
    queued: r.events.filter((e) => e.e === 'queued').map((e) => ({ reason: e.reason as string, reasons: e.reasons as string[] })),
    ...(energy ? { energy } : {}),
  };
}

export const stewardStatus = (n: NodeProc): Promise<StewardView> => get<StewardView>(n, `/v1/steward?overlay=${OVERLAY}`);
export const witnessStatus = (n: NodeProc): Promise<WitnessView> => get<WitnessView>(n, `/v1/witness?overlay=${OVERLAY}`);

/** Wait until the steward's ledger is witnessed up to its current length (and at least `length`). */
export async function waitWitnessed(steward: NodeProc, length: number): Promise<StewardView> {
  return waitFor(`the steward's ledger witnessed to length ${length}`, async () => {
    const s = await stewardStatus(steward);
    return s.ledger.length >= length && s.attestation.grade === 'witnessed' && s.attestation.witnessedLength === s.ledger.length ? s : undefined;
  }, 45_000);
}

/** `c0mpute ledger <cmd> --json <path>` as a real process (the steward must be stopped: LevelDB holds one writer). */
export async function ledgerCli(c: Cluster, cmd: 'show' | 'verify', path: string): Promise<{ r: CliResult; json: Record<string, unknown> }> {
  const r = await c0mpute(c.dataDir('auditor').dir, ['ledger', cmd, '--json', path]);
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(r.out) as Record<string, unknown>;
  } catch {
    throw new Error(`ledger ${cmd} printed no JSON (exit ${r.code}): ${r.out}\n${r.err}`);
  }
  return { r, json };
}

export async function showLedger(c: Cluster, dir: string): Promise<LedgerRow[]> {
  const { r, json } = await ledgerCli(c, 'show', dir);
  if (r.code !== 0 || json.ok !== true) throw new Error(`ledger show failed (exit ${r.code}): ${r.out}\n${r.err}`);
  return json.entries as LedgerRow[];
}
