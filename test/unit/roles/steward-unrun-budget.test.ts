/**
 * A buyer's claims withdrawn with nothing run cost it a token each (src/roles/steward-admission.ts UNRUN_WITHDRAWS):
 * past the budget its next new claim is refused STEWARD_RATE_LIMITED until tokens return; a claim asked again is
 * still answered; a claim that ran costs nothing; another buyer is not touched. Before (review s42 R7 F1) one entitled
 * key admitted and withdrew 85 claims a second, each an Admitted and a Released entry in the ledger (never pruned),
 * the job in the store and two info lines: a 1 GiB disk in under two hours. The admission line and the withdraw
 * handler over a real Ledger and LevelDB in a temp dir (steward-rig.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CborValue } from '../../../src/records/cbor.js';
import { AdmissionLine, UNRUN_WITHDRAWS } from '../../../src/roles/steward-admission.js';
import { withdraw } from '../../../src/roles/steward-handlers.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import type { StewardPorts } from '../../../src/roles/steward-ports.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { NOW, P, advert, job, offer, receipt } from '../market/fixtures.js';
import { selection } from './preempt-fixtures.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { openDb, closeDb } from '../../../src/store/db.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { stewardOnStub, stubBuyer, until } from './steward-stub.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000000, guarantee_devices: 16, over_quota_weight: 0, priority: 0 }
  - { id: one, parent: lab, guarantee_uj: 50000000000, guarantee_devices: 8, over_quota_weight: 0, priority: 1 }
`;
const est = { uj: 1_000, grade: 'Estimator' as const };
const a = P(1);
const jobOf = (n: number, buyer = a) => job(buyer, { nonce: new Uint8Array([n >> 8, n & 255, 77]) });

/** An admission line over the rig, its budget on `mono()`; `admit` and `withdrawOf` as a buyer's streams ask them; `body` runs, then all is closed. */
type Line = {
  admit: (j: ReturnType<typeof job>, o?: { estimate?: unknown; onFrame?: (f: { t?: string }, leave: () => void) => void }) => Promise<void>;
  withdrawOf: (j: ReturnType<typeof job>) => Promise<void>;
  r: Awaited<ReturnType<typeof stewardRig>>;
  tick: (ms: number) => void;
  line: AdmissionLine;
  /** The jobs the line stored. */
  stored: string[];
};
async function withLine(body: (o: Line) => Promise<void>): Promise<void> {
  const t = tempDir('c0-unrun-');
  let mono = 0;
  const r = await stewardRig(t.dir, TREE);
  const stored: string[] = [];
  const records = { ...r.ports.records, put: async (j: ReturnType<typeof job>) => (stored.push(j.address), true) };
  const line = new AdmissionLine({ ports: { ...r.ports, records, monoClock: () => mono } as StewardPorts, ledger: r.ledger, cfg: r.cfg, accounts: r.accounts, reclaim: r.reclaim, tree: r.tree, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs });
  const admit: Line['admit'] = (j, o = {}) => {
    const stream = new AbortController();
    const leave = () => stream.abort(new Error('the buyer reset the stream'));
    return line.admit({ op: 'admit', job: j.bytes, entitlement: 'one', estimate: o.estimate ?? est } as never, { peer: peerIdFromDid(j.signer), signal: stream.signal, send: async (f: CborValue) => o.onFrame?.(f as { t?: string }, leave) } as never);
  };
  const withdrawOf = (j: ReturnType<typeof job>) => withdraw(r.accounts, { op: 'withdraw', job: j.address }, { peer: peerIdFromDid(j.signer), send: async () => {} }, undefined, line);
  try {
    await body({ admit, withdrawOf, r, tick: (ms) => void (mono += ms), line, stored });
  } finally {
    line.stop();
    await r.close();
    t.cleanup();
  }
}

const rateLimited = (inS: number) => (e: { code?: string; message: string }) => e.code === 'STEWARD_RATE_LIMITED' && new RegExp(`ask again in ${inS} s`).test(e.message);

describe('claims withdrawn unrun', () => {
  it("past the budget a buyer's new claim is refused STEWARD_RATE_LIMITED; its claim asked again, and another buyer, are not", async () => {
    await withLine(async ({ admit, withdrawOf, tick }) => {
      const held = jobOf(1);
      await admit(held); // kept open: asked again below
      for (let i = 0; i < UNRUN_WITHDRAWS.burst; i++) {
        const j = jobOf(100 + i);
        await admit(j);
        await withdrawOf(j);
      }
      // before: admitted (and withdrawn) without end
      await assert.rejects(admit(jobOf(2)), rateLimited(2));
      await admit(held); // asked again (its answer lost): answered, not refused
      await admit(jobOf(3, P(2))); // another buyer
      tick(2_000); // a token back
      await admit(jobOf(4));
    });
  });

  it('a receipt held aside (signed by any key) does not make a withdrawn claim one that ran (second-round review s42 R8 F1)', async () => {
    await withLine(async ({ admit, withdrawOf, r }) => {
      let refused = 0;
      for (let i = 0; i < UNRUN_WITHDRAWS.burst + 1 && !refused; i++) {
        const j = jobOf(200 + i);
        await admit(j).catch((e: { code?: string }) => {
          assert.equal(e.code, 'STEWARD_RATE_LIMITED');
          refused++;
        });
        if (refused) break;
        // a 'failed' receipt from a throwaway key no selection named: held aside, not charged
        await r.accounts.onReceipt(receipt(P(200 + i), a, offer(P(200 + i), j, 'sha256:' + '31'.repeat(32)), { status: 'failed', failure: { code: 'EXEC_FAILED', message: 'x' } } as never));
        assert.equal(r.accounts.get(j.address)?.aside?.size, 1, 'held aside');
        await withdrawOf(j);
      }
      // before: every round counted as one that ran, none refused
      assert.equal(refused, 1);
    });
  });

  it("a selection the buyer signed naming a throwaway key's offer does not make a withdrawn claim one that ran (review s43 R1 F1)", async () => {
    await withLine(async ({ admit, withdrawOf, r }) => {
      let refused = 0;
      for (let i = 0; i < UNRUN_WITHDRAWS.burst + 1; i++) {
        const j = jobOf(500 + i);
        try {
          await admit(j);
        } catch (e) {
          assert.equal((e as { code?: string }).code, 'STEWARD_RATE_LIMITED');
          refused++;
          break;
        }
        // an offer signed by a fresh key, and the buyer's own selection naming it: a winner chosen, nothing delivered
        const x = P(600 + i);
        const o = offer(x, j, advert(x));
        r.offers.set(o.address, o);
        await r.accounts.onSelection(selection(a, o, x));
        assert.equal(r.accounts.get(j.address)?.winners.size, 1, 'the winner chosen');
        await withdrawOf(j);
      }
      // before: every round counted as one that ran (a winner named), none refused
      assert.equal(refused, 1);
    });
  });

  it('a denied ask costs a token and stores nothing (review s43 R1 F3)', async () => {
    await withLine(async ({ admit, stored }) => {
      const denied: string[] = [];
      let refused: string | undefined;
      for (let i = 0; i < UNRUN_WITHDRAWS.burst + 1 && !refused; i++) {
        await admit(jobOf(700 + i), { estimate: { uj: 9e15, grade: 'Estimator' }, onFrame: (f) => void (f.t === 'denied' && denied.push(f.t)) }).catch((e: { code?: string }) => void (refused = e.code));
      }
      // before: 3,000 denials, never refused, each job stored
      assert.equal(refused, 'STEWARD_RATE_LIMITED');
      assert.equal(denied.length, UNRUN_WITHDRAWS.burst);
      assert.deepEqual(stored, []);
    });
  });

  it('a queued claim dropped after its buyer left (instead of withdrawing it) costs a token (review s43 R1 F3)', async () => {
    await withLine(async ({ admit, r, line }) => {
      r.cfg.reaskGraceMs = 1;
      // the entitlement's 8 devices held
      for (let i = 0; i < 8; i++) await admit(jobOf(800 + i));
      let refused: string | undefined;
      let rounds = 0;
      for (; rounds < UNRUN_WITHDRAWS.burst + 1 && !refused; rounds++) {
        const j = jobOf(900 + rounds);
        // queued, then the stream dropped
        const asked = admit(j, { onFrame: (f, leave) => void (f.t === 'queued' && leave()) }).catch((e: { code?: string }) => void (refused = e.code));
        await asked;
        if (refused) break;
        await until(() => !line.queued(NOW).some((w) => w.claim === j.address), 'the claim dropped after the grace');
      }
      // before: never refused (only STEWARD_QUEUE_FULL at 256 in line, ~8.5 rounds a second per key)
      assert.equal(refused, 'STEWARD_RATE_LIMITED');
      assert.equal(rounds, UNRUN_WITHDRAWS.burst);
    });
  });

  it("a refusal is preceded by a `rate-limited` frame saying when to ask again (review s43 R1 F4)", async () => {
    await withLine(async ({ admit, withdrawOf }) => {
      for (let i = 0; i < UNRUN_WITHDRAWS.burst; i++) {
        const j = jobOf(1_000 + i);
        await admit(j);
        await withdrawOf(j);
      }
      const frames: Array<{ t?: string; retry_in_ms?: unknown }> = [];
      await assert.rejects(admit(jobOf(1_100), { onFrame: (f) => void frames.push(f) }), rateLimited(2));
      assert.deepEqual(frames, [{ t: 'rate-limited', retry_in_ms: 2_000 }]);
    });
  });

  it('claims admitted together while one token was left are charged as they are withdrawn, into debt (second-round review s42 R8 F2)', async () => {
    await withLine(async ({ admit, withdrawOf }) => {
      for (let i = 0; i < UNRUN_WITHDRAWS.burst - 1; i++) {
        const j = jobOf(300 + i);
        await admit(j);
        await withdrawOf(j);
      }
      // one token left: eight admitted at once (the devices allow 8), then all withdrawn
      const together = Array.from({ length: 8 }, (_, i) => jobOf(400 + i));
      await Promise.all(together.map((j) => admit(j)));
      for (const j of together) await withdrawOf(j);
      // before: the withdraws past the last token took nothing, and the next claim was refused for 2 s only
      await assert.rejects(admit(jobOf(5)), rateLimited(16));
    });
  });

  it('a gang\'s claims withdrawn unrun count in its buyer\'s budget (review s42 R9 F1)', async () => {
    // before: 110 admit-gang and withdraw rounds a second, two ledger entries each, never refused
    const t = tempDir('c0-unrun-gang-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const db = await openDb(join(t.dir, 'db'));
    const st = await stewardOnStub(t.dir, db, new Map());
    try {
      let refused: string | undefined;
      let rounds = 0;
      for (; rounds < UNRUN_WITHDRAWS.burst + 20 && !refused; rounds++) {
        const runYaml = stringify({ name: `g${rounds}`, model: { layers: [4, 8, 3] }, seed: rounds, stepsPerEpoch: 2, epochs: 1, members: [P(11), P(12)].map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) });
        const run = buildRun(runYaml, stubBuyer.signer, NOW).bundle.run;
        const frames: Array<Record<string, unknown>> = [];
        try {
          await st.ask({ op: 'admit-gang', run: run.bytes, entitlement: 'one', estimate: est, devices_per_member: 1, deadline: NOW + 4_000_000 }, stubBuyer.did, frames);
        } catch (e) {
          refused = (e as { code?: string }).code;
          break;
        }
        assert.equal(frames.at(-1)?.t, 'admitted', JSON.stringify(frames));
        await st.ask({ op: 'withdraw', job: run.address });
      }
      assert.equal(refused, 'STEWARD_RATE_LIMITED');
      assert.ok(rounds >= UNRUN_WITHDRAWS.burst && rounds < UNRUN_WITHDRAWS.burst + 20, `${rounds} rounds`);
    } finally {
      await st.s.stop();
      await closeDb(db);
      t.cleanup();
    }
  });

  it("a gang's denied ask costs a token, as a job's does (review s43 R1 F3, left open then)", async () => {
    // before: a gang that never fits asked for as fast as the steward decided, never refused
    const t = tempDir('c0-unrun-gang-deny-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const db = await openDb(join(t.dir, 'db'));
    const st = await stewardOnStub(t.dir, db, new Map());
    try {
      let refused: string | undefined;
      let denied = 0;
      for (let rounds = 0; rounds < UNRUN_WITHDRAWS.burst + 20 && !refused; rounds++) {
        const runYaml = stringify({ name: `d${rounds}`, model: { layers: [4, 8, 3] }, seed: rounds, stepsPerEpoch: 2, epochs: 1, members: [P(11), P(12)].map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) });
        const run = buildRun(runYaml, stubBuyer.signer, NOW).bundle.run;
        const frames: Array<Record<string, unknown>> = [];
        try {
          // past the entitlement's guarantee on an Estimator figure: denied
          await st.ask({ op: 'admit-gang', run: run.bytes, entitlement: 'one', estimate: { uj: 9e15, grade: 'Estimator' }, devices_per_member: 1, deadline: NOW + 4_000_000 }, stubBuyer.did, frames);
        } catch (e) {
          refused = (e as { code?: string }).code;
          break;
        }
        assert.equal(frames.at(-1)?.t, 'denied', JSON.stringify(frames));
        denied++;
      }
      assert.equal(refused, 'STEWARD_RATE_LIMITED');
      assert.equal(denied, UNRUN_WITHDRAWS.burst);
    } finally {
      await st.s.stop();
      await closeDb(db);
      t.cleanup();
    }
  });
});
