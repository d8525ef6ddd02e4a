/**
 * The steward's admissions are decided one at a time (pool/1 §4; the
 * admission section of src/roles/steward-admission.ts, src/util/serial.ts):
 * two claims that each fit alone but not together, asked at the same moment —
 * two fresh jobs, a gang and a job, a queued claim woken by a release and a
 * fresh one — get exactly one `Admitted` entry; the other is queued
 * (DEVICES_HELD, §4.5). A real Ledger and LevelDB in a temp dir; the overlay's
 * ports are stubs and capacity is the pool's verdict alone.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { CborValue } from '../../../src/records/cbor.js';
import { AdmissionLine } from '../../../src/roles/steward-admission.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { Serial } from '../../../src/util/serial.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { NOW, P, job } from '../market/fixtures.js';

// `one` has room for one device, `pair` for two: each claim below fits alone, not with the other.
const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: one, parent: lab, guarantee_uj: 50000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
  - { id: pair, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;

const buyer = P(1);
const est = { uj: 10_000_000, grade: 'Estimator' as const };
const jobN = (n: number) => job(buyer, { nonce: new Uint8Array([n, 42]) });
const admitReq = (j: ReturnType<typeof job>, entitlement: string) => ({ op: 'admit' as const, job: j.bytes, entitlement, estimate: est });

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), `timed out waiting for ${what}`);
}

/** The admission section, counting the sections asked for (a test can wait until an ask is in line for it). */
class CountingSerial extends Serial {
  asked = 0;
  override run<T>(fn: () => Promise<T> | T): Promise<T> {
    this.asked++;
    return super.run(fn);
  }
}

async function stewardAt(dir: string) {
  const ref: { line?: AdmissionLine } = {};
  const serial = new CountingSerial();
  const r = await stewardRig(dir, TREE, { serial, line: () => ref.line!.serve() });
  const { ledger, accounts, gangs } = r;
  const line = (ref.line = new AdmissionLine({ ports: r.ports, ledger, cfg: r.cfg, accounts, reclaim: r.reclaim, tree: r.tree, stopped: () => false, append: r.append, serial, gangs }));
  /** A buyer's stream: the frames it was sent. */
  const stream = () => {
    const frames: Array<Record<string, unknown>> = [];
    return { frames, ctx: { peer: peerIdFromDid(buyer.did), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f as Record<string, unknown>) } };
  };
  const admitted = async () => (await ledger.records(0)).filter((e) => e.event === 'Admitted').map((e) => e.claim);
  const close = async () => {
    line.stop();
    await r.close();
  };
  return { ledger, accounts, gangs, line, serial, stream, admitted, close };
}

describe('steward admissions are decided one at a time', () => {
  it('two fresh jobs that each fit alone, asked together: one Admitted, the other queued DEVICES_HELD', async () => {
    const t = tempDir('c0-admit-race-');
    try {
      const s = await stewardAt(t.dir);
      const [a, b] = [s.stream(), s.stream()];
      const [ja, jb] = [jobN(1), jobN(2)];
      const asks = Promise.all([s.line.admit(admitReq(ja, 'one'), a.ctx), s.line.admit(admitReq(jb, 'one'), b.ctx)]);
      await until(() => a.frames.length > 0 && b.frames.length > 0, 'both answers');
      assert.deepEqual(await s.admitted(), [ja.address]);
      assert.deepEqual([a.frames[0]!.t, b.frames[0]!.t, b.frames[0]!.reason], ['admitted', 'queued', 'DEVICES_HELD']);
      // The queued ask waits on its stream; stopping ends it without a verdict.
      await s.close();
      await asks;
    } finally {
      t.cleanup();
    }
  });

  it('a gang and a job that each fit alone, asked together: one Admitted, the other told queued', async () => {
    const t = tempDir('c0-admit-race-');
    try {
      const s = await stewardAt(t.dir);
      const runYaml = stringify({ name: 'g', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: [P(11), P(12)].map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) });
      const run = buildRun(runYaml, buyer.signer, NOW).bundle.run;
      const [g, a] = [s.stream(), s.stream()];
      const ja = jobN(3);
      const gangAsk = { op: 'admit-gang' as const, run: run.bytes, entitlement: 'pair', estimate: est, devices_per_member: 1, deadline: NOW + 4_000_000 };
      const asks = Promise.all([s.gangs.admitGang(gangAsk, g.ctx), s.line.admit(admitReq(ja, 'pair'), a.ctx)]);
      await until(() => g.frames.length > 0 && a.frames.length > 0, 'both answers');
      const won = await s.admitted();
      assert.equal(won.length, 1, `exactly one Admitted entry, got ${won.length}`);
      const [winner, loser] = won[0] === run.address ? [g, a] : [a, g];
      assert.equal(winner.frames[0]!.t, 'admitted');
      assert.deepEqual([loser.frames[0]!.t, loser.frames[0]!.reason], ['queued', 'DEVICES_HELD']);
      await s.close();
      await asks;
    } finally {
      t.cleanup();
    }
  });

  it('a queued claim woken by a release and a fresh ask at the same moment: the queued one is admitted, the fresh one queued', async () => {
    const t = tempDir('c0-admit-race-');
    try {
      const s = await stewardAt(t.dir);
      const [a, b, c] = [s.stream(), s.stream(), s.stream()];
      const [ja, jb, jc] = [jobN(4), jobN(5), jobN(6)];
      await s.line.admit(admitReq(ja, 'one'), a.ctx);
      const waitB = s.line.admit(admitReq(jb, 'one'), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      assert.equal(b.frames[0]!.t, 'queued');
      // A's claim ends: its device is free in the book. The pass over the line and C's ask start together.
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      void s.line.retry();
      const askC = s.line.admit(admitReq(jc, 'one'), c.ctx);
      await until(() => b.frames.length > 1 && c.frames.length > 0, 'B admitted and C answered');
      assert.deepEqual(await s.admitted(), [ja.address, jb.address]);
      assert.deepEqual([b.frames[1]!.t, c.frames[0]!.t, c.frames[0]!.reason], ['admitted', 'queued', 'DEVICES_HELD']);
      await waitB;
      await s.close();
      await askC;
    } finally {
      t.cleanup();
    }
  });
});

describe('the line goes first: a fresh claim does not take capacity a queued claim can use', () => {
  it('a fresh ask that reaches the section before the pass over the line is queued behind the claim already waiting', async () => {
    const t = tempDir('c0-admit-line-');
    try {
      const s = await stewardAt(t.dir);
      const [a, b, c] = [s.stream(), s.stream(), s.stream()];
      const [ja, jb, jc] = [jobN(7), jobN(8), jobN(9)];
      await s.line.admit(admitReq(ja, 'one'), a.ctx);
      const waitB = s.line.admit(admitReq(jb, 'one'), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      // The section is busy; C asks and waits for it; then A's device frees and the release asks for a pass, behind C.
      let open!: () => void;
      const busy = s.serial.run(() => new Promise<void>((r) => (open = r)));
      const asked = s.serial.asked;
      const askC = s.line.admit(admitReq(jc, 'one'), c.ctx);
      await until(() => s.serial.asked === asked + 1, 'C waiting for the section');
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      void s.line.retry();
      open();
      await busy;
      await until(() => b.frames.length > 1 && c.frames.length > 0, 'B admitted and C answered');
      assert.deepEqual(await s.admitted(), [ja.address, jb.address]);
      assert.deepEqual([b.frames[1]!.t, c.frames[0]!.t, c.frames[0]!.reason, c.frames[0]!.place], ['admitted', 'queued', 'DEVICES_HELD', 1]);
      await waitB;
      await s.close();
      await askC;
    } finally {
      t.cleanup();
    }
  });

  it('a queued claim held for its away buyer after a restart holds the line: a fresh ask is queued LINE_AHEAD, and the returning buyer is admitted first', async () => {
    const t = tempDir('c0-admit-line-');
    try {
      const s = await stewardAt(t.dir);
      const [a, b] = [s.stream(), s.stream()];
      const [ja, jb, jc] = [jobN(10), jobN(11), jobN(12)];
      await s.line.admit(admitReq(ja, 'one'), a.ctx);
      const waitB = s.line.admit(admitReq(jb, 'one'), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      // A's device frees while the steward is down: B comes back in line with its buyer away.
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      await s.close();
      await waitB;
      const s2 = await stewardAt(t.dir);
      await s2.line.restore();
      const [b2, c] = [s2.stream(), s2.stream()];
      const askC = s2.line.admit(admitReq(jc, 'one'), c.ctx);
      await until(() => c.frames.length > 0, 'C answered');
      assert.deepEqual([c.frames[0]!.t, c.frames[0]!.reason, c.frames[0]!.place], ['queued', 'LINE_AHEAD', 2]);
      assert.deepEqual(await s2.admitted(), [ja.address]);
      // B's buyer asks again: B keeps its place and takes the device; C waits on.
      const askB = s2.line.admit(admitReq(jb, 'one'), b2.ctx);
      await until(() => b2.frames.length > 1, 'B admitted');
      assert.deepEqual(b2.frames.map((f) => f.t), ['queued', 'admitted']);
      assert.deepEqual(await s2.admitted(), [ja.address, jb.address]);
      assert.equal(c.frames.length, 1);
      await askB;
      await s2.close();
      await askC;
    } finally {
      t.cleanup();
    }
  });

  it('a gang asked when capacity frees does not take the device of a job waiting in line', async () => {
    const t = tempDir('c0-admit-line-');
    try {
      const s = await stewardAt(t.dir);
      const runYaml = stringify({ name: 'g1', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: [P(13)].map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) });
      const run = buildRun(runYaml, buyer.signer, NOW).bundle.run;
      const [a, b, g] = [s.stream(), s.stream(), s.stream()];
      const [ja, jb] = [jobN(14), jobN(15)];
      await s.line.admit(admitReq(ja, 'one'), a.ctx);
      const waitB = s.line.admit(admitReq(jb, 'one'), b.ctx);
      await until(() => b.frames.length > 0, 'B queued');
      await s.accounts.release(s.accounts.get(ja.address)!, 'test');
      const gangAsk = { op: 'admit-gang' as const, run: run.bytes, entitlement: 'one', estimate: est, devices_per_member: 1, deadline: NOW + 4_000_000 };
      await s.gangs.admitGang(gangAsk, g.ctx);
      await until(() => b.frames.length > 1, 'B admitted');
      assert.deepEqual(await s.admitted(), [ja.address, jb.address]);
      assert.deepEqual(g.frames.map((f) => [f.t, f.reason]), [['queued', 'DEVICES_HELD'], ['expired', 'DEVICES_HELD']]);
      await waitB;
      await s.close();
    } finally {
      t.cleanup();
    }
  });
});

describe('the same claim asked again while its first ask is still in the admission section', () => {
  /** A stream that broke (a half-open link, a reset): every send fails. */
  const deadStream = () => ({ peer: peerIdFromDid(buyer.did), signal: new AbortController().signal, send: async () => Promise.reject(new Error('stream reset')) });
  /** Hold every ledger append until `open()`: the first ask is inside the section, at its append, when the re-ask comes. */
  const holdAppends = (s: Awaited<ReturnType<typeof stewardAt>>) => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let held = 0;
    const append = s.ledger.append.bind(s.ledger);
    s.ledger.append = (async (...args: Parameters<typeof append>) => {
      held++;
      await gate;
      return append(...args);
    }) as typeof s.ledger.append;
    return { open, held: () => held };
  };

  it('a job: one Admitted entry and one reservation; the re-ask is answered `admitted` once the first is appended', async () => {
    const t = tempDir('c0-admit-again-');
    try {
      const s = await stewardAt(t.dir);
      const gate = holdAppends(s);
      const j = jobN(20);
      const first = s.line.admit(admitReq(j, 'pair'), deadStream());
      await until(() => gate.held() === 1, 'the first ask at its append');
      const again = s.stream();
      const asked = s.serial.asked;
      const reask = s.line.admit(admitReq(j, 'pair'), again.ctx);
      await until(() => s.serial.asked === asked + 1, 're-ask waiting for the section');
      gate.open();
      await assert.rejects(first, /stream reset/);
      await reask;
      assert.deepEqual(await s.admitted(), [j.address]);
      assert.deepEqual(again.frames.map((f) => f.t), ['admitted']);
      assert.equal(gate.held(), 1, 'nothing appended for the re-ask');
      // one claim open, reserving its estimate and its device once
      assert.equal(s.ledger.book.open.size, 1);
      assert.equal(s.ledger.book.open.get(j.address)!.reserved.uj, est.uj);
      assert.ok(s.accounts.get(j.address));
      // a second job for the pair's other device is still admitted: the first holds one device, not two
      const other = s.stream();
      await s.line.admit(admitReq(jobN(21), 'pair'), other.ctx);
      assert.equal(other.frames[0]!.t, 'admitted');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a job that waits: one place in line, kept by the re-ask; the first ask’s wait ends without a verdict', async () => {
    const t = tempDir('c0-admit-again-');
    try {
      const s = await stewardAt(t.dir);
      const [a, b] = [s.stream(), s.stream()];
      await s.line.admit(admitReq(jobN(22), 'one'), a.ctx);
      const j = jobN(23);
      let open!: () => void;
      const busy = s.serial.run(() => new Promise<void>((r) => (open = r)));
      const asked = s.serial.asked;
      const firstAsk = s.line.admit(admitReq(j, 'one'), b.ctx);
      const again = s.stream();
      const reask = s.line.admit(admitReq(j, 'one'), again.ctx);
      await until(() => s.serial.asked === asked + 2, 'both asks waiting for the section');
      open();
      await busy;
      await firstAsk;
      await until(() => again.frames.length > 0, 're-ask queued');
      assert.deepEqual(b.frames.map((f) => [f.t, f.place]), [['queued', 1]]);
      assert.deepEqual(again.frames.map((f) => [f.t, f.place]), [['queued', 1]]);
      assert.equal(s.line.queued(NOW).length, 1, 'one place in line');
      await s.close();
      await reask;
    } finally {
      t.cleanup();
    }
  });

  it('a gang: one Admitted entry; the re-ask is answered `admitted` with the gang', async () => {
    const t = tempDir('c0-admit-again-');
    try {
      const s = await stewardAt(t.dir);
      const gate = holdAppends(s);
      const runYaml = stringify({ name: 'g2', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: [P(14), P(15)].map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) });
      const run = buildRun(runYaml, buyer.signer, NOW).bundle.run;
      const gangAsk = { op: 'admit-gang' as const, run: run.bytes, entitlement: 'pair', estimate: est, devices_per_member: 1, deadline: NOW + 4_000_000 };
      const first = s.gangs.admitGang(gangAsk, deadStream());
      await until(() => gate.held() === 1, 'the first ask at its append');
      const again = s.stream();
      const asked = s.serial.asked;
      const reask = s.gangs.admitGang(gangAsk, again.ctx);
      await until(() => s.serial.asked === asked + 1, 're-ask waiting for the section');
      gate.open();
      await assert.rejects(first, /stream reset/);
      await reask;
      assert.deepEqual(await s.admitted(), [run.address]);
      assert.deepEqual(again.frames.map((f) => [f.t, f.gang]), [['admitted', run.address]]);
      assert.equal(s.ledger.book.open.size, 1);
      await s.close();
    } finally {
      t.cleanup();
    }
  });
});
