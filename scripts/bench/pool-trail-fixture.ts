/**
 * A pool member's dispatch trail full of signed history (bench pools, and the
 * tests of the operator's figures, test/unit/pools/status-figures.test.ts):
 * real dispatch, job, offer, receipt and settlement envelopes of one pool of
 * three members, in every shape a trail can hold — settled, completed without
 * its settlement yet, failed (several codes), failed as lost by another
 * member, open, completed under two coordinators (disputed), a second
 * coordinator's entry beside the first's, junk bytes, a settlement that is not
 * the roster's split, and entries an older build kept without their roster
 * (`~r!`), settled by a roster the member may or may not hold. Seeded: the same
 * seed gives the same trail.
 */
import { compareDids, didFromPublicKey } from '../../src/records/did.js';
import { Ed25519Signer } from '../../src/records/ed25519.js';
import { hashHex } from '../../src/records/address.js';
import { open, seal, type Opened } from '../../src/records/envelope.js';
import { T, type Job, type Offer, type PoolRoster, type Receipt } from '../../src/records/kinds.js';
import { splitPrice } from '../../src/pools/settlement.js';
import { LOST_CODE } from '../../src/pools/outcome.js';
import type { DispatchTrail, TrailEntry } from '../../src/pools/trail.js';
import { seededRandom } from '../../src/net/faults.js';

export const FIXTURE_NOW = 1_800_000_000_000;
const DAY = 24 * 3600_000;

/** A small seeded generator (mulberry32: src/net/faults.ts). */
export const prng = seededRandom;

/** `under-r2`: dispatched and settled under `r2`, which the trail then keeps (the legacy jobs' settlements check out from then on). */
export type Shape = 'settled' | 'unsettled' | 'failed' | 'lost' | 'open' | 'disputed' | 'second' | 'junk' | 'greedy' | 'legacy' | 'under-r2';
/** A realistic mix: mostly settled, some failed, a few open. */
export const REALISTIC: Partial<Record<Shape, number>> = { settled: 90, failed: 6, lost: 2, open: 1, second: 1 };
/** Every shape. */
export const EVERY: Partial<Record<Shape, number>> = { settled: 30, unsettled: 8, failed: 12, lost: 8, open: 10, disputed: 6, second: 8, junk: 4, greedy: 4, legacy: 10 };

export class PoolFixture {
  readonly poolKey = new Ed25519Signer(new Uint8Array(32).fill(140));
  readonly pool = didFromPublicKey(this.poolKey.publicKey);
  readonly keys = [141, 142, 143].map((n) => new Ed25519Signer(new Uint8Array(32).fill(n)));
  readonly buyer = new Ed25519Signer(new Uint8Array(32).fill(149));
  readonly members: string[];
  /** The roster every dispatch names but a legacy one; `r2` (other weights) settles the legacy ones. */
  readonly r: Opened<PoolRoster>;
  readonly r2: Opened<PoolRoster>;
  #n = 0;

  constructor() {
    this.members = this.keys.map((k) => didFromPublicKey(k.publicKey)).sort(compareDids);
    const roster = (seq: number, w: (i: number) => number) =>
      seal(T.poolRoster, { seq, issuedAt: FIXTURE_NOW, expiresAt: FIXTURE_NOW + 80 * DAY, epochMs: 10_000, members: this.members.map((did, i) => ({ did, hardware: { cpuCores: 4, memoryMiB: 8192 }, weight: w(i) })) }, this.poolKey) as Opened<PoolRoster>;
    this.r = roster(1, (i) => i + 1);
    this.r2 = roster(2, (i) => 3 - i);
  }

  keyOf(did: string): Ed25519Signer {
    return this.keys.find((k) => didFromPublicKey(k.publicKey) === did)!;
  }

  #receipt(j: Opened<Job>, o: Opened<Offer>, by: string, roster: Opened<PoolRoster>, failure?: string): Opened<Receipt> {
    const membership = seal(T.poolMembership, { pool: this.pool, roster: roster.address, seq: roster.record.seq, status: 'member', signedAt: FIXTURE_NOW }, this.keyOf(by));
    const rec: Receipt = {
      job: j.address,
      offer: o.address,
      buyer: j.signer,
      provider: this.pool,
      workload: j.record.workload,
      status: failure ? 'failed' : 'completed',
      startedAt: FIXTURE_NOW,
      completedAt: FIXTURE_NOW + 1,
      inputHash: j.record.input.hash,
      ...(failure ? { failure: { code: failure, message: 'x' } } : { outputHash: hashHex(Uint8Array.of(this.#n & 0xff)), outputSize: 1 }),
      price: o.record.price,
      energy: { uj: 0, grade: 'Estimator' },
      pool: { roster: roster.bytes, membership: membership.bytes },
    };
    return seal(T.receipt, rec, this.keyOf(by)) as Opened<Receipt>;
  }

  /**
   * Write one job of `shape` into `trail` (synced, through its own API, as members do), dated `until` for the history's
   * pruning. Returns the job's address and the open entries it left (coordinator DIDs), for a later close.
   */
  async write(trail: DispatchTrail, shape: Shape, rnd: () => number, until: number): Promise<{ job: string; open: string[] }> {
    const n = ++this.#n;
    const pick = <X>(xs: readonly X[]): X => xs[Math.floor(rnd() * xs.length)]!;
    const currency = rnd() < 0.8 ? 'USD' : 'EUR';
    const amount = pick(['0.009', '0.01', '1', '0.000001', '12.5', '0.0000003']);
    const input = hashHex(Uint8Array.of(n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, 9));
    const j = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '100', currency }, announcedAt: FIXTURE_NOW, deadline: FIXTURE_NOW + 120_000, timeoutMs: 60_000, input: { hash: input, size: 4 }, inputSealed: 'no', nonce: Uint8Array.of(n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff) }, this.buyer) as Opened<Job>;
    const member = pick(this.members);
    const coords = shape === 'disputed' || shape === 'second' ? [...this.members].sort(() => rnd() - 0.5).slice(0, 2) : [pick(this.members)];
    const legacy = shape === 'legacy';
    const roster = legacy || shape === 'under-r2' ? this.r2 : this.r;
    const open: string[] = [];
    for (const [i, c] of coords.entries()) {
      const o = seal(T.offer, { job: j.address, advert: 'sha256:' + 'a'.repeat(64), price: { amount, currency }, durationMs: 1000, issuedAt: FIXTURE_NOW, startBy: FIXTURE_NOW + 10_000, expiresAt: FIXTURE_NOW + 10_000 }, this.keyOf(c)) as Opened<Offer>;
      const d = seal(T.poolDispatch, { pool: this.pool, roster: roster.address, job: j.address, offer: o.address, member, coordinator: c, epoch: 0, issuedAt: FIXTURE_NOW }, this.keyOf(c));
      // An older build kept no roster with its dispatches: its settlements check out only while the member holds it.
      await trail.record(j.address, c, { dispatch: d.bytes, job: j.bytes, offer: o.bytes }, until, undefined, legacy ? undefined : roster);
      const settle = (rec: Opened<Receipt>, parts = splitPrice(rec.record.price, roster.record.members)) => seal(T.poolSettlement, { pool: this.pool, roster: roster.address, job: j.address, receipt: rec.address, price: rec.record.price, parts, signedAt: FIXTURE_NOW }, this.keyOf(c)).bytes;
      const kind = shape === 'second' ? (i === 0 ? 'settled' : pick(['open', 'lost', 'failed'] as const)) : shape === 'disputed' || shape === 'legacy' || shape === 'under-r2' ? 'settled' : shape;
      if (kind === 'open') {
        open.push(c);
        continue;
      }
      if (kind === 'settled') {
        const rec = this.#receipt(j, o, c, roster);
        await trail.close(j.address, c, 'completed', rec.bytes, settle(rec));
      } else if (kind === 'unsettled') {
        await trail.close(j.address, c, 'completed', this.#receipt(j, o, c, roster).bytes);
      } else if (kind === 'failed') {
        await trail.close(j.address, c, 'failed', this.#receipt(j, o, c, roster, pick(['EXEC_FAILED', 'EXEC_TIMEOUT', 'POOL_MEMBER_BUSY'])).bytes);
      } else if (kind === 'lost') {
        await trail.close(j.address, c, 'failed', this.#receipt(j, o, pick(this.members.filter((m) => m !== c)), roster, LOST_CODE).bytes);
      } else if (kind === 'junk') {
        await trail.close(j.address, c, rnd() < 0.5 ? 'completed' : 'failed', Uint8Array.of(1, 2, 3));
      } else if (kind === 'greedy') {
        const rec = this.#receipt(j, o, c, roster);
        await trail.close(j.address, c, 'completed', rec.bytes, settle(rec, [{ member: c, weight: 1, amount: rec.record.price.amount }]));
      }
    }
    return { job: j.address, open };
  }

  /** Close an entry `write` left open: completed and settled, failed, or failed as lost by another member. */
  async close(trail: DispatchTrail, job: string, coordinator: string, rnd: () => number): Promise<void> {
    const entry = (await trail.entries(job)).find((e) => e.key.endsWith(`|${coordinator}`))?.entry as TrailEntry;
    const j = openJob(entry);
    const o = openOffer(entry);
    const x = rnd();
    if (x < 0.5) {
      const rec = this.#receipt(j, o, coordinator, this.r);
      const s = seal(T.poolSettlement, { pool: this.pool, roster: this.r.address, job, receipt: rec.address, price: rec.record.price, parts: splitPrice(rec.record.price, this.r.record.members), signedAt: FIXTURE_NOW }, this.keyOf(coordinator));
      await trail.close(job, coordinator, 'completed', rec.bytes, s.bytes);
    } else if (x < 0.8) {
      await trail.close(job, coordinator, 'failed', this.#receipt(j, o, coordinator, this.r, 'EXEC_FAILED').bytes);
    } else {
      await trail.close(job, coordinator, 'failed', this.#receipt(j, o, this.members.find((m) => m !== coordinator)!, this.r, LOST_CODE).bytes);
    }
  }
}

const openJob = (e: TrailEntry): Opened<Job> => open(e.job, T.job, { trusted: true });
const openOffer = (e: TrailEntry): Opened<Offer> => open(e.offer, T.offer, { trusted: true });

/** A shape drawn from `mix` (weights). */
export function drawShape(mix: Partial<Record<Shape, number>>, rnd: () => number): Shape {
  const all = Object.entries(mix) as Array<[Shape, number]>;
  let x = rnd() * all.reduce((s, [, w]) => s + w, 0);
  for (const [s, w] of all) if ((x -= w) < 0) return s;
  return all[all.length - 1]![0];
}
