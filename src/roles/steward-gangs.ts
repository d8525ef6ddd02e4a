/**
 * A training gang admitted as ONE pool/1 claim on a stewarded overlay (pool/1
 * §2.4 the claim, §4 admission, §6.2 release; docs/training.md "A gang on a
 * stewarded overlay"). Part of src/roles/steward.ts.
 *
 * - `admit-gang` (on `/c0mpute/steward/1`): the buyer sends the run it signed
 *   (`train-run/1`, its members are the gang), the entitlement, an estimate of
 *   the gang's total energy (or a class to derive one from, §2.6), the devices
 *   per member and a deadline. The claim's id is the run's address, its
 *   `gang_size` the run's member count: the gang is decided as a whole (§4,
 *   preempting lower-priority claims first when needed, §5.2) and one
 *   `Admitted` entry is appended. A gang that does not fit now is answered
 *   `queued` then `expired` at once: gangs do not wait in line (not built).
 *   The decision and its append run in the steward's admission section, with
 *   the single jobs' (src/roles/steward-admission.ts, src/util/serial.ts);
 *   the line of queued jobs is served first, so a gang does not take what a
 *   claim already waiting can use (and is `queued` `LINE_AHEAD` while a
 *   claim that would be admitted is held for its away buyer).
 * - Each member job then asks `admit` citing the claim (`gang: {claim,
 *   member}`, and the job's signed `params` cite the same, for the provider):
 *   the steward binds job → (claim, member) once, synced to LevelDB before it
 *   answers; a member index ≥ gang_size, or a member already bound to another
 *   job, is STEWARD_GANG_FULL; a member job asking more GPUs than the gang's
 *   devices_per_member (kept in the gang record) is STEWARD_GANG_DEVICES.
 * - The binding is what lets the accounts (src/roles/steward-accounts.ts)
 *   charge every member's receipt to the one claim — only a receipt signed by
 *   the run member at that job's index (signedByMember): anyone can sign a
 *   receipt naming a member job; receipts charged are kept here too, so a
 *   release after a restart still sums every member's energy.
 *
 * Store (the overlay's `steward-gangs` sublevel): `g/<claim>` → canonical
 * CBOR GangRecord (the steward's own state, not a signed record);
 * `r/<claim>/<receipt address>` → the receipt envelope.
 */
import { C0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical, type CborValue } from '../records/cbor.js';
import { open, type Opened } from '../records/envelope.js';
import { T, type Energy, type Job, type Receipt } from '../records/kinds.js';
import { TRAIN_T, type TrainRun } from '../training/record-kinds.js';
import { checkClaim, type Claim, type Verdict } from '../pool/admission.js';
import type { Ledger } from '../ledger/store.js';
import type { Sub } from '../store/db.js';
import type { ClaimAccounts } from './steward-accounts.js';
import { appendAdmitted, type Reclaimer } from './steward-reclaim.js';
import { claimEstimate, lineAhead, type QueueVerdict } from './steward-admission.js';
import type { OpenClaim } from '../pool/usage.js';
import type { Serial } from '../util/serial.js';
import type { StewardConfig, StewardPorts, StewardStream } from './steward-ports.js';
import { citeOf, type GangCite } from './gang-cite.js';

export type { GangCite } from './gang-cite.js';

/** The furthest a gang's deadline may be from now: the bound on how long its claim can be held. */
export const GANG_MAX_MS = 24 * 3600_000;

export interface AdmitGangRequest {
  op: 'admit-gang';
  /** The `train-run/1` envelope the buyer signed. */
  run: Uint8Array;
  entitlement: string;
  class?: string;
  /** The gang's total energy (pool/1 §2.4: the figures describe the whole gang). */
  estimate?: Energy;
  devices_per_member?: number;
  /** Absolute ms: the claim is released by then (plus the accounts' grace) whatever happened. */
  deadline: number;
}

export interface GangRecord {
  claim: string;
  buyer: string;
  entitlement: string;
  size: number;
  /** Devices each member may occupy (the request's devices_per_member; absent in a record stored by an earlier version: see devicesPerMember). */
  dpm?: number;
  deadline: number;
  /** member index → the job bound to it */
  members: Record<number, string>;
  /**
   * The run's members (`run.record.members`, member index → DID): only the one at a job's index may sign a receipt
   * charged to the gang. Absent in a record stored by an earlier version (see signedByMember).
   */
  dids?: string[];
}

export class GangStore {
  constructor(private readonly sub: Sub) {}

  async load(): Promise<{ gangs: GangRecord[]; receipts: Map<string, Opened<Receipt>[]> }> {
    const gangs: GangRecord[] = [];
    const receipts = new Map<string, Opened<Receipt>[]>();
    for await (const [k, v] of this.sub.iterator()) {
      if (k.startsWith('g/')) {
        const m = decodeCanonical(v) as unknown as { claim: string; buyer: string; entitlement: string; size: number; dpm?: number; deadline: number; members: Array<[number, string]>; dids?: string[] };
        gangs.push({ claim: m.claim, buyer: m.buyer, entitlement: m.entitlement, size: m.size, ...(typeof m.dpm === 'number' ? { dpm: m.dpm } : {}), deadline: m.deadline, members: Object.fromEntries(m.members), ...(Array.isArray(m.dids) ? { dids: m.dids } : {}) });
      } else if (k.startsWith('r/')) {
        const claim = k.slice(2, k.lastIndexOf('/'));
        receipts.set(claim, [...(receipts.get(claim) ?? []), open(v, T.receipt)]);
      }
    }
    return { gangs, receipts };
  }

  async put(g: GangRecord): Promise<void> {
    const members = Object.entries(g.members).map(([i, job]) => [Number(i), job]);
    const value = encodeCanonical({ claim: g.claim, buyer: g.buyer, entitlement: g.entitlement, size: g.size, ...(g.dpm === undefined ? {} : { dpm: g.dpm }), deadline: g.deadline, members, ...(g.dids ? { dids: g.dids } : {}) } as unknown as CborValue);
    await this.sub.batch([{ type: 'put', key: `g/${g.claim}`, value }], { sync: true } as never);
  }

  async putReceipt(claim: string, r: Opened<Receipt>): Promise<void> {
    await this.sub.batch([{ type: 'put', key: `r/${claim}/${r.address}`, value: r.bytes }], { sync: true } as never);
  }

  async remove(claim: string): Promise<void> {
    const dels: Array<{ type: 'del'; key: string }> = [{ type: 'del', key: `g/${claim}` }];
    for await (const k of this.sub.keys({ gt: `r/${claim}/`, lt: `r/${claim}/~` })) dels.push({ type: 'del', key: k });
    await this.sub.batch(dels, { sync: true } as never);
  }
}

export interface GangDeps {
  ports: StewardPorts;
  ledger: Ledger;
  cfg: StewardConfig;
  accounts: ClaimAccounts;
  reclaim: Reclaimer;
  append: Ledger['append'];
  /** The steward's admission section, shared with the single jobs' (src/roles/steward-admission.ts). */
  serial: Serial;
  /** Serve the line of queued jobs first, inside the section; answers whether it is held (AdmissionLine.serve). */
  line?: () => Promise<boolean>;
}

/** What a gang's decision in the admission section came to; the buyer is told outside it. */
type GangOutcome = { again: OpenClaim } | { v: (Verdict & { verdict: 'Deny' }) | QueueVerdict } | { admit: Verdict & { verdict: 'Admit' }; seq: number; entry: string };

export class Gangs {
  readonly #gangs = new Map<string, GangRecord>();
  /** job → its gang's claim */
  readonly #jobs = new Map<string, string>();
  readonly store: GangStore;

  constructor(private d: GangDeps) {
    this.store = new GangStore(d.ports.sub('steward-gangs'));
  }

  get(claim: string): GangRecord | undefined {
    return this.#gangs.get(claim);
  }

  /** `status()`'s view: each open gang, its size and how many member jobs are bound. */
  view(): Array<Record<string, unknown>> {
    return [...this.#gangs.values()].map((g) => ({ claim: g.claim, entitlement: g.entitlement, size: g.size, bound: Object.keys(g.members).length, deadline: g.deadline }));
  }

  /** The gang claim a member job is bound to. */
  claimOf(job: string): string | undefined {
    return this.#jobs.get(job);
  }

  /** The member index a job is bound to in its gang. */
  memberOf(job: string): number | undefined {
    const g = this.#gangs.get(this.#jobs.get(job) ?? '');
    if (!g) return undefined;
    const e = Object.entries(g.members).find(([, j]) => j === job);
    return e ? Number(e[0]) : undefined;
  }

  /**
   * Load the gangs from the store after a restart: those whose claim is
   * still open come back, tracked again in the accounts with the receipts
   * seen before the restart; the rest (released, or stored but never
   * appended) are dropped. Answers the claims it tracked.
   */
  async restore(): Promise<Set<string>> {
    const { gangs, receipts } = await this.store.load();
    const tracked = new Set<string>();
    for (const g of gangs) {
      const open_ = this.d.ledger.book.open.get(g.claim);
      if (!open_) {
        await this.store.remove(g.claim);
        continue;
      }
      this.#gangs.set(g.claim, g);
      for (const job of Object.values(g.members)) this.#jobs.set(job, g.claim);
      const oj = this.d.accounts.track(g.claim, open_.entitlement, g.buyer, g.deadline, g.size);
      for (const r of receipts.get(g.claim) ?? []) oj.receipts.set(r.address, r);
      tracked.add(g.claim);
    }
    return tracked;
  }

  /** A gang's claim was released: forget it (its ledger entries stay). */
  async released(claim: string): Promise<void> {
    const g = this.#gangs.get(claim);
    if (!g) return;
    this.#gangs.delete(claim);
    for (const job of Object.values(g.members)) this.#jobs.delete(job);
    await this.store.remove(claim);
  }

  /**
   * Whether a receipt for a bound member job was signed by the run member at that job's index (pool/1 §6.2: the
   * actual figure is what the work cost, and only the member doing it can say). A gang record stored by an earlier
   * version has no member DIDs: its receipts are checked by the job binding alone, as then (such a record lives at
   * most GANG_MAX_MS).
   */
  signedByMember(r: Opened<Receipt>): boolean {
    const g = this.#gangs.get(this.#jobs.get(r.record.job) ?? '');
    const m = this.memberOf(r.record.job);
    if (!g || m === undefined) return false;
    if (!g.dids) return true;
    return g.dids[m] !== undefined && r.signer === g.dids[m];
  }

  async noteReceipt(claim: string, r: Opened<Receipt>): Promise<void> {
    if (this.#gangs.has(claim)) await this.store.putReceipt(claim, r);
  }

  /**
   * Decides a gang's ask and answers it on `ctx`: what the answer was (`again`: the same answer for a gang admitted
   * already, nothing decided), so the caller can charge an ask that ran nothing (Steward's #admitGang).
   */
  async admitGang(req: AdmitGangRequest, ctx: StewardStream): Promise<'admitted' | 'again' | 'denied' | 'not-held'> {
    if (!(req.run instanceof Uint8Array)) throw new C0Error('STEWARD_BAD_REQUEST', 'admit-gang: run must be a train-run envelope', { field: 'run' });
    if (typeof req.entitlement !== 'string') throw new C0Error('STEWARD_BAD_REQUEST', 'admit-gang: entitlement is required', { field: 'entitlement' });
    const now = this.d.ports.clock();
    if (typeof req.deadline !== 'number' || !Number.isSafeInteger(req.deadline) || req.deadline <= now || req.deadline > now + GANG_MAX_MS) {
      throw new C0Error('STEWARD_BAD_REQUEST', `admit-gang: deadline must be in the next ${GANG_MAX_MS / 3600_000} h`, { field: 'deadline' });
    }
    const dpm = req.devices_per_member ?? 1;
    let run: Opened<TrainRun>;
    try {
      run = open(req.run, TRAIN_T.run) as Opened<TrainRun>;
    } catch (e) {
      throw new C0Error('STEWARD_BAD_REQUEST', `admit-gang: the run does not open: ${(e as Error).message}`, { field: 'run' });
    }
    const { didFromPeerId } = await import('../node/peer-id.js');
    if (didFromPeerId(ctx.peer.toString()) !== run.signer) throw new C0Error('STEWARD_NOT_BUYER', 'only the run’s signer may ask to admit its gang');
    const o = await this.d.serial.run(() => this.#decide(run, req, dpm));
    if ('again' in o) {
      // Asked again (the first answer was lost): the same answer, nothing recorded.
      await ctx.send({ t: 'admitted', reserved: o.again.reserved, devices: o.again.devices, borrowed_uj: o.again.borrowed_uj, gang: run.address } as never);
      return 'again';
    }
    if ('v' in o) {
      if (o.v.verdict === 'Deny') {
        await ctx.send({ t: 'denied', reason: o.v.reason, reasons: o.v.reasons, ...(o.v.basis ? { basis: o.v.basis } : {}) } as never);
        return 'denied';
      }
      // A Queue verdict, reported as such (§4.5); the gang does not wait in line: the buyer asks again later.
      await ctx.send({ t: 'queued', reason: o.v.reason, reasons: o.v.reasons, place: 0 } as never);
      await ctx.send({ t: 'expired', reason: o.v.reason } as never);
      return 'not-held';
    }
    await ctx.send({ t: 'admitted', reserved: o.admit.reserved, devices: o.admit.devices, borrowed_uj: o.admit.borrowed_uj, seq: o.seq, entry: o.entry, gang: run.address } as never);
    return 'admitted';
  }

  /**
   * A gang's decision, in the admission section: decide, preempt if needed
   * (holding the section until the victims' providers answer; rare), decide
   * again, append only if that decision admits (appendAdmitted).
   */
  async #decide(run: Opened<TrainRun>, req: AdmitGangRequest, dpm: number): Promise<GangOutcome> {
    const open_ = this.d.ledger.book.open.get(run.address);
    if (open_) return { again: open_ };
    if (this.d.ledger.book.released.has(run.address)) throw new C0Error('STEWARD_ALREADY_RELEASED', 'this gang was admitted and has been released already');
    const estimate = claimEstimate(req, this.d.ledger, this.d.cfg, 'admit-gang: give the gang’s total energy estimate, or a class with enough measured history');
    const claim: Claim = checkClaim({ id: run.address, entitlement: req.entitlement, ...(req.class ? { class: req.class } : {}), gang_size: run.record.members.length, devices_per_member: dpm, estimate });
    const g: GangRecord = { claim: claim.id, buyer: run.signer, entitlement: claim.entitlement, size: claim.gang_size, dpm: claim.devices_per_member, deadline: req.deadline, members: {}, dids: [...run.record.members] };
    // The line goes first: the jobs already waiting take what freed before the gang is decided.
    const held = (await this.d.line?.()) ?? false;
    const decided = this.d.reclaim.decideNow(claim);
    const { victims } = decided;
    const v: Verdict | QueueVerdict = decided.v.verdict === 'Admit' && held ? lineAhead(claim) : decided.v;
    const log = this.d.ports.log;
    if (v.verdict !== 'Admit') {
      // debug: nothing is recorded, the buyer is told and asks again later (at info, a gang that never fits wrote a line
      // per ask: 1,132 in 13 s from one key, review s42 R9 F1)
      if (v.verdict === 'Deny') log.debug({ claim: claim.id, entitlement: claim.entitlement, gang: claim.gang_size, reason: v.reason }, 'gang denied');
      else log.debug({ claim: claim.id, entitlement: claim.entitlement, gang: claim.gang_size, reason: v.reason }, 'gang does not fit now; not held in line');
      return { v };
    }
    // Stored before the append (we are inside the admission section, so nothing decides meanwhile); a record
    // whose claim the ledger never shows open (a crash before the append) is dropped at the next start.
    await this.store.put(g);
    const o = await appendAdmitted(this.d, claim, { v, victims });
    if ('v' in o) {
      // Decided again before the append and not admitted (a preemption that freed nothing): the record goes, the verdict stands.
      await this.store.remove(g.claim).catch((e) => log.warn({ claim: claim.id, err: (e as Error).message }, 'cannot drop a gang record never appended (dropped at the next start)'));
      log.info({ claim: claim.id, entitlement: claim.entitlement, gang: claim.gang_size, verdict: o.v.verdict, reason: o.v.reason }, 'gang not admitted when decided again before the append');
      return { v: o.v };
    }
    const { admit, ...r } = o;
    this.#gangs.set(g.claim, g);
    this.d.accounts.track(claim.id, claim.entitlement, run.signer, req.deadline, claim.gang_size);
    log.info({ claim: claim.id, entitlement: claim.entitlement, gang: claim.gang_size, reserved: admit.reserved, seq: r.seq }, 'gang admitted');
    return { admit, seq: r.seq, entry: r.address };
  }

  /** The devices each member of a gang may occupy: as stored, or (a record from an earlier version) its Admitted devices over its size. */
  devicesPerMember(g: GangRecord, admitted: Pick<OpenClaim, 'devices'>): number {
    return g.dpm ?? Math.floor(admitted.devices / g.size);
  }

  /** A member job citing an admitted gang: bind it (once per member index), or refuse. */
  async admitMember(job: Opened<Job>, entitlement: string, cite: GangCite, ctx: Pick<StewardStream, 'send'>): Promise<void> {
    const g = this.#gangs.get(cite.claim);
    if (!g || !this.d.ledger.book.open.has(cite.claim)) {
      if (this.d.ledger.book.released.has(cite.claim)) throw new C0Error('STEWARD_ALREADY_RELEASED', 'this gang’s claim has been released already');
      throw new C0Error('STEWARD_GANG_UNKNOWN', 'no open gang claim with this id', { field: 'gang' });
    }
    if (job.signer !== g.buyer) throw new C0Error('STEWARD_NOT_BUYER', 'only the gang’s buyer may add member jobs to it');
    if (entitlement !== g.entitlement) throw new C0Error('STEWARD_CLAIM_MISMATCH', `this gang is admitted under entitlement ${g.entitlement}`, { field: 'entitlement' });
    const signed = citeOf(job.record.params);
    if (!signed || signed.claim !== cite.claim || signed.member !== cite.member) throw new C0Error('STEWARD_GANG_CITE', 'the job’s params must cite the same gang claim and member', { field: 'params' });
    const admitted = this.d.ledger.book.open.get(cite.claim)!;
    const answer = { t: 'admitted', reserved: admitted.reserved, devices: admitted.devices, borrowed_uj: admitted.borrowed_uj, gang: cite.claim, member: cite.member };
    if (g.members[cite.member] === job.address) {
      await ctx.send(answer as never);
      return;
    }
    if (!Number.isSafeInteger(cite.member) || cite.member < 0 || cite.member >= g.size || g.members[cite.member] !== undefined) {
      throw new C0Error('STEWARD_GANG_FULL', `the gang has ${g.size} members and member ${cite.member} is not free`, { field: 'gang', detail: { size: g.size, member: cite.member } });
    }
    if (job.record.deadline > g.deadline) throw new C0Error('STEWARD_GANG_DEADLINE', 'a member job’s deadline may not be past its gang’s', { field: 'deadline' });
    // The gang holds size × devices_per_member devices (pool/1 §2.4: its figures describe the whole gang); a member
    // occupies its GPUs, or one machine slot without (as a single job does).
    const dpm = this.devicesPerMember(g, admitted);
    const asks = job.record.requirements.gpu?.count ?? 1;
    if (asks > dpm) {
      throw new C0Error('STEWARD_GANG_DEVICES', `the gang was admitted for ${dpm} device(s) per member; this member job asks ${asks}`, { field: 'requirements', detail: { devicesPerMember: dpm, asks } });
    }
    // Bound in memory before the first await (a concurrent ask for the same member finds it taken), on disk before the answer.
    const next: GangRecord = { ...g, members: { ...g.members, [cite.member]: job.address } };
    this.#gangs.set(g.claim, next);
    this.#jobs.set(job.address, g.claim);
    try {
      await this.store.put(next);
    } catch (e) {
      this.#gangs.set(g.claim, g);
      this.#jobs.delete(job.address);
      throw e;
    }
    await this.d.ports.records.put(job);
    this.d.ports.log.info({ claim: g.claim, member: cite.member, job: job.address }, 'gang member job bound');
    await ctx.send(answer as never);
  }
}
