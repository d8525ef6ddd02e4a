/**
 * The steward's line is bounded (docs/overlays.md "A bounded line"): past
 * steward.maxQueuedPerBuyer claims of one buyer, or steward.maxQueued in all,
 * a claim that would wait is refused STEWARD_QUEUE_FULL, nothing queued or
 * appended; a claim already in line that its buyer asks for again keeps its
 * place; a claim that fits now is admitted whatever the line holds. And the
 * line restored after a restart (docs/overlays.md): a claim whose buyer asks
 * again within steward.reaskGraceMs keeps its place, one whose buyer does not
 * is dropped, from the line and from disk; one whose buyer the tree no longer
 * lists is dropped at the restore. A real Ledger and LevelDB in a temp dir;
 * the overlay's ports are stubs.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { CborValue } from '../../../src/records/cbor.js';
import { C0Error } from '../../../src/errors.js';
import { AdmissionLine } from '../../../src/roles/steward-admission.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { treeFromYaml } from '../../../src/pool/index.js';
import { NOW, P, job, type Party } from '../market/fixtures.js';

// `one` has room for one device; `other` for one more: a claim on `one` waits while another holds it.
const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: one, parent: lab, guarantee_uj: 50000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
  - { id: other, parent: lab, guarantee_uj: 50000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
`;
const est = { uj: 1_000_000, grade: 'Estimator' as const };

it('past steward.maxQueuedPerBuyer or steward.maxQueued a claim that would wait is refused STEWARD_QUEUE_FULL; re-asks keep their place; a fitting claim is still admitted', async () => {
  const t = tempDir('c0-queue-bound-');
  const r = await stewardRig(t.dir, TREE, {});
  const line = new AdmissionLine({ ports: r.ports, ledger: r.ledger, cfg: r.cfg, accounts: r.accounts, reclaim: r.reclaim, tree: r.tree, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs });
  r.cfg.maxQueuedPerBuyer = 2;
  r.cfg.maxQueued = 3;
  const [alice, bob] = [P(1), P(2)];
  let nonce = 0;
  const ask = (b: Party, entitlement: string) => {
    const j = job(b, { nonce: new Uint8Array([++nonce, 7]), deadline: NOW + 3_600_000 });
    const frames: Array<Record<string, unknown>> = [];
    const ctx = { peer: peerIdFromDid(b.did), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f as Record<string, unknown>) };
    const again = () => line.admit({ op: 'admit', job: j.bytes, entitlement, estimate: est } as never, ctx);
    return { j, frames, done: again().catch((e: unknown) => e), again };
  };
  const first = async (a: ReturnType<typeof ask>) => {
    for (let i = 0; i < 500 && a.frames.length === 0; i++) {
      const settled = await Promise.race([a.done, new Promise((res) => setTimeout(() => res('pending'), 10))]);
      if (settled !== 'pending' && settled !== undefined) return settled;
    }
    return a.frames[0]!.t === 'queued' ? `queued ${String(a.frames[0]!.reason)}` : String(a.frames[0]!.t);
  };
  const code = (x: unknown) => (x instanceof C0Error ? x.code : String(x));
  try {
    assert.equal(await first(ask(alice, 'one')), 'admitted');
    const a2 = ask(alice, 'one');
    assert.equal(await first(a2), 'queued DEVICES_HELD');
    assert.equal(await first(ask(alice, 'one')), 'queued DEVICES_HELD');
    // alice's third claim in line: refused, with the bound named
    const a4 = await first(ask(alice, 'one'));
    assert.equal(code(a4), 'STEWARD_QUEUE_FULL');
    assert.match((a4 as C0Error).message, /maxQueuedPerBuyer 2/);
    // her queued claim asked again keeps its place: no refusal, still two of hers in line
    const again = a2.again().catch((e: unknown) => e);
    await new Promise((res) => setTimeout(res, 50));
    assert.equal(line.queued(NOW).length, 2);
    // bob's first claim that waits fills the line (3 in all); his next is refused by the total
    assert.equal(await first(ask(bob, 'one')), 'queued DEVICES_HELD');
    const b2 = await first(ask(bob, 'one'));
    assert.equal(code(b2), 'STEWARD_QUEUE_FULL');
    assert.match((b2 as C0Error).message, /maxQueued 3/);
    // a claim that fits now is not a claim in line: admitted
    assert.equal(await first(ask(bob, 'other')), 'admitted');
    // nothing of the refused claims was appended: two Admitted entries, three claims in line
    const entries = await r.ledger.records(0);
    assert.deepEqual(entries.map((e) => e.event), ['Admitted', 'Admitted']);
    assert.equal(line.queued(NOW).length, 3);
    line.stop();
    await again;
  } finally {
    line.stop();
    await r.close();
    t.cleanup();
  }
});

/** `b` asks `line` to admit `j` under `one`: the frames it is sent, and the ask's end (its error, if any). */
function ask(line: AdmissionLine, j: ReturnType<typeof job>, b: Party) {
  const frames: Array<Record<string, unknown>> = [];
  const ctx = { peer: peerIdFromDid(b.did), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f as Record<string, unknown>) };
  return { frames, done: line.admit({ op: 'admit', job: j.bytes, entitlement: 'one', estimate: est } as never, ctx).catch((e: unknown) => e) };
}

/** Waits (3 s at most) until `cond` holds. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !cond(); i++) await new Promise((res) => setTimeout(res, 10));
  assert.ok(cond());
}

it('a restored line: a claim whose buyer asks again within steward.reaskGraceMs keeps its place, one whose buyer does not is dropped (from disk too)', async () => {
  const t = tempDir('c0-queue-grace-');
  const r = await stewardRig(t.dir, TREE, {});
  const lineOf = () => new AdmissionLine({ ports: r.ports, ledger: r.ledger, cfg: r.cfg, accounts: r.accounts, reclaim: r.reclaim, tree: r.tree, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs });
  r.cfg.reaskGraceMs = 150;
  const [alice, bob] = [P(3), P(4)];
  let second: AdmissionLine | undefined;
  try {
    const first = lineOf();
    const [j0, ja, jb] = [job(alice, { nonce: new Uint8Array([1, 9]) }), job(alice, { nonce: new Uint8Array([2, 9]) }), job(bob, { nonce: new Uint8Array([3, 9]) })];
    const holder = ask(first, j0, alice);
    await until(() => holder.frames[0]?.t === 'admitted');
    const a = ask(first, ja, alice);
    const b = ask(first, jb, bob);
    await until(() => a.frames.length > 0 && b.frames.length > 0);
    assert.equal(first.queued(NOW).length, 2);
    first.stop(); // the steward stops: the line stays on disk
    await Promise.all([a.done, b.done]);

    second = lineOf();
    await second.restore();
    assert.deepEqual(second.queued(NOW).map((q) => q.claim), [ja.address, jb.address]);
    const again = ask(second, ja, alice); // alice comes back in time; bob never does
    await until(() => again.frames[0]?.t === 'queued');
    await new Promise((res) => setTimeout(res, 400));
    assert.deepEqual(second.queued(NOW).map((q) => q.claim), [ja.address], "bob's claim left the line after the grace");
    second.stop();
    await again.done;
    const third = lineOf();
    await third.restore();
    assert.deepEqual(third.queued(NOW).map((q) => q.claim), [ja.address], 'and the disk');
    third.stop();
  } finally {
    second?.stop();
    await r.close();
    t.cleanup();
  }
});

it("a restored line: a claim whose buyer the tree no longer lists is dropped at the restore (from disk too)", async () => {
  const t = tempDir('c0-queue-roster-');
  const [alice, bob] = [P(3), P(4)];
  const listing = (dids: string[]) => TREE.replace("id: one, parent: lab,", `id: one, parent: lab, buyers: [${dids.join(', ')}],`);
  const r = await stewardRig(t.dir, listing([alice.did, bob.did]), {});
  const lineOf = (tree = r.tree) => new AdmissionLine({ ports: r.ports, ledger: r.ledger, cfg: r.cfg, accounts: r.accounts, reclaim: r.reclaim, tree, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs });
  try {
    const first = lineOf();
    const [j0, jb, ja] = [job(alice, { nonce: new Uint8Array([1, 8]) }), job(bob, { nonce: new Uint8Array([2, 8]) }), job(alice, { nonce: new Uint8Array([3, 8]) })];
    const holder = ask(first, j0, alice);
    await until(() => holder.frames[0]?.t === 'admitted');
    const b = ask(first, jb, bob);
    const a = ask(first, ja, alice);
    await until(() => a.frames.length > 0 && b.frames.length > 0);
    assert.deepEqual(first.queued(NOW).map((q) => q.claim), [jb.address, ja.address]);
    first.stop();
    await Promise.all([a.done, b.done]);

    // restarted with bob taken off the roster (QA ffWitnessDay2 F4: before, his claim was restored first in line and,
    // once it fitted, held the line for the re-ask grace although his re-ask is refused STEWARD_NOT_ENTITLED)
    const second = lineOf(treeFromYaml(listing([alice.did]), 'tree.yaml'));
    await second.restore();
    assert.deepEqual(second.queued(NOW).map((q) => q.claim), [ja.address]);
    second.stop();
    const third = lineOf();
    await third.restore();
    assert.deepEqual(third.queued(NOW).map((q) => q.claim), [ja.address], 'and the disk');
    third.stop();
  } finally {
    await r.close();
    t.cleanup();
  }
});
