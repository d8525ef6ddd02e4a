/**
 * A `withdraw` of a claim the steward holds but has not admitted yet (s35a finding 1's steward-side gaps): the buyer's
 * admission client sends one when it gives up on an ask that may have landed (src/roles/admission-client.ts).
 *
 * - A claim waiting in line is taken out of it and out of the queue store, its waiting ask told `expired`
 *   `WITHDRAWN`, and the line decided again; the answer is `released: dequeued`. Before, the answer was `no` and the
 *   claim stayed in line, to be admitted later for a buyer that was gone.
 * - A claim being decided (a preemption waiting on a stop, its append on its way to disk, a pass deciding a queued
 *   claim) is not left admitted: not admitted at all, or, its `Admitted` entry sealed already, released at once with
 *   nothing spent; the answer is `released: noted`. Before, `no`, and the claim was held until its deadline.
 * - A queued buyer whose stream closes is away at once (the re-ask grace), so it is not admitted into a dead stream.
 *
 * The admission line and the withdraw handler over a real Ledger and LevelDB in a temp dir (steward-rig.ts), and the
 * whole Steward over a stub overlay for a gang (steward-stub.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CborValue } from '../../../src/records/cbor.js';
import { AdmissionLine } from '../../../src/roles/steward-admission.js';
import { withdraw } from '../../../src/roles/steward-handlers.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig, type RigOptions } from './steward-rig.js';
import { until } from './steward-stub.js';
import { NOW, P, job } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: one, parent: lab, guarantee_uj: 50000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;

const buyer = P(1);
const other = P(2);
const est = { uj: 10_000_000, grade: 'Estimator' as const };
const jobN = (n: number) => job(buyer, { nonce: new Uint8Array([n, 35]) });
const admitReq = (j: ReturnType<typeof job>, entitlement = 'one') => ({ op: 'admit' as const, job: j.bytes, entitlement, estimate: est });
type Frame = Record<string, unknown>;
/** The `expired` frame's reason for a withdrawn claim, as clients read it off the wire (steward-admission.ts WITHDRAWN). */
const WITHDRAWN = 'WITHDRAWN';

async function lineAt(dir: string, o: RigOptions & { reaskGraceMs?: number } = {}) {
  const ref: { line?: AdmissionLine } = {};
  const r = await stewardRig(dir, TREE, { ...o, line: () => ref.line!.serve() });
  if (o.reaskGraceMs !== undefined) r.cfg.reaskGraceMs = o.reaskGraceMs;
  const { ledger, accounts } = r;
  const line = (ref.line = new AdmissionLine({ ports: r.ports, ledger, cfg: r.cfg, accounts, reclaim: r.reclaim, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs }));
  /** A buyer's stream: the frames it was sent; `leave()` closes it (the buyer reset it, or its connection dropped). */
  const stream = () => {
    const frames: Frame[] = [];
    const gone = new AbortController();
    return { frames, leave: () => gone.abort(new Error('the caller reset the stream')), ctx: { peer: peerIdFromDid(buyer.did), signal: gone.signal, send: async (f: CborValue) => void frames.push(f as Frame) } };
  };
  /** `withdraw` of `claim` on /c0mpute/steward/1 from `from`: the `released` answered (a refusal rejects). */
  const withdrawOf = async (claim: string, from = buyer.did) => {
    const out: Frame[] = [];
    await withdraw(accounts, { op: 'withdraw', job: claim }, { peer: peerIdFromDid(from), send: async (f) => void out.push(f as Frame) }, undefined, line);
    return out[0]?.released;
  };
  const events = async () => (await ledger.records(0)).map((e) => [e.event, e.claim] as const);
  const close = async () => {
    line.stop();
    await r.close();
  };
  return { ...r, line, stream, withdrawOf, events, close };
}

describe('withdraw of a queued claim', () => {
  it('its buyer’s withdraw takes it out of the line and the queue store, ends its waiting ask `expired` WITHDRAWN and answers `dequeued`; anyone else’s is refused', async () => {
    const t = tempDir('c0-withdraw-line-');
    try {
      const s = await lineAt(t.dir);
      const [a, b] = [s.stream(), s.stream()];
      const [ja, jb] = [jobN(1), jobN(2)];
      await s.line.admit(admitReq(ja), a.ctx);
      const waitB = s.line.admit(admitReq(jb), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      assert.equal(b.frames[0]!.t, 'queued');
      await assert.rejects(s.withdrawOf(jb.address, other.did), /STEWARD_NOT_BUYER|only the job/);
      assert.equal(s.line.queued(NOW).length, 1, 'still in line after a stranger’s withdraw');
      assert.equal(await s.withdrawOf(jb.address), 'dequeued');
      await waitB;
      assert.deepEqual(b.frames.map((f) => [f.t, f.reason]), [['queued', 'DEVICES_HELD'], ['expired', WITHDRAWN]]);
      assert.deepEqual(s.line.queued(NOW), []);
      // A's device frees: nothing is admitted for the buyer that left
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      await s.line.retry();
      await s.serial.run(() => {});
      assert.deepEqual(await s.events(), [
        ['Admitted', ja.address],
        ['Released', ja.address],
      ]);
      // a second withdraw finds nothing
      assert.equal(await s.withdrawOf(jb.address), 'no');
      await s.close();
      // gone from the queue store too: a restart brings nothing back
      const s2 = await lineAt(t.dir);
      await s2.line.restore();
      assert.deepEqual(s2.line.queued(NOW), []);
      await s2.close();
    } finally {
      t.cleanup();
    }
  });

  it('the line is decided again: a claim held for its away buyer, withdrawn, lets the claim behind it be admitted', async () => {
    const t = tempDir('c0-withdraw-line-');
    try {
      const s = await lineAt(t.dir);
      const [a, b] = [s.stream(), s.stream()];
      const [ja, jb, jc] = [jobN(3), jobN(4), jobN(5)];
      await s.line.admit(admitReq(ja), a.ctx);
      const waitB = s.line.admit(admitReq(jb), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      await s.close();
      await waitB;
      // after a restart B is held for its away buyer: C waits LINE_AHEAD behind it
      const s2 = await lineAt(t.dir);
      await s2.line.restore();
      const c = s2.stream();
      const askC = s2.line.admit(admitReq(jc), c.ctx);
      await until(() => c.frames.length > 0, 'C queued');
      assert.deepEqual([c.frames[0]!.t, c.frames[0]!.reason], ['queued', 'LINE_AHEAD']);
      assert.equal(await s2.withdrawOf(jb.address), 'dequeued');
      await until(() => c.frames.length > 1, 'C admitted');
      assert.equal(c.frames[1]!.t, 'admitted');
      await askC;
      assert.deepEqual((await s2.events()).filter(([e]) => e === 'Admitted').map(([, claim]) => claim), [ja.address, jc.address]);
      await s2.close();
    } finally {
      t.cleanup();
    }
  });
});
