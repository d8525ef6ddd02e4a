/**
 * A job whose deadline is more than 24.8 days away (a Node timer's limit; src/util/timers.ts): the steward's
 * deadline timers for an admitted claim (ClaimAccounts: release at the deadline) and for a queued one
 * (AdmissionLine: expire at the deadline) wait for the deadline instead of firing after 1 ms. A real Ledger and
 * LevelDB in a temp dir; the overlay's ports are stubs.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { CborValue } from '../../../src/records/cbor.js';
import { AdmissionLine } from '../../../src/roles/steward-admission.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { NOW, P, job } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 1, over_quota_weight: 0, priority: 0 }
`;
const est = { uj: 1_000_000, grade: 'Estimator' as const };
const MONTH = 30 * 24 * 3600_000;

it('a claim admitted or queued with a deadline 30 days away stays open / in line (no 1 ms timer)', async () => {
  const t = tempDir('c0-long-deadline-');
  const r = await stewardRig(t.dir, TREE, {});
  const line = new AdmissionLine({ ports: r.ports, ledger: r.ledger, cfg: r.cfg, accounts: r.accounts, reclaim: r.reclaim, tree: r.tree, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs });
  const alice = P(1);
  let nonce = 0;
  const ask = () => {
    const j = job(alice, { nonce: new Uint8Array([++nonce, 9]), deadline: NOW + MONTH });
    const frames: Array<Record<string, unknown>> = [];
    const ctx = { peer: peerIdFromDid(alice.did), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f as Record<string, unknown>) };
    const done = line.admit({ op: 'admit', job: j.bytes, entitlement: 'lab', estimate: est } as never, ctx).catch((e: unknown) => e);
    return { j, frames, done };
  };
  const settle = async (a: { frames: unknown[] }) => {
    for (let i = 0; i < 500 && a.frames.length === 0; i++) await new Promise((res) => setTimeout(res, 10));
  };
  try {
    const first = ask();
    await settle(first);
    assert.equal(first.frames[0]!.t, 'admitted');
    const second = ask();
    await settle(second);
    assert.equal(second.frames[0]!.t, 'queued');
    await new Promise((res) => setTimeout(res, 100));
    assert.ok(r.ledger.book.open.has(first.j.address), 'the admitted claim was released at once');
    assert.deepEqual(
      second.frames.map((f) => f.t),
      ['queued'],
      'the queued claim expired at once',
    );
  } finally {
    line.stop();
    await r.close();
    t.cleanup();
  }
});
