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
import { P, job } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000000, guarantee_devices: 16, over_quota_weight: 0, priority: 0 }
  - { id: one, parent: lab, guarantee_uj: 50000000000, guarantee_devices: 8, over_quota_weight: 0, priority: 1 }
`;
const est = { uj: 1_000, grade: 'Estimator' as const };

describe('claims withdrawn unrun', () => {
  it('past the budget a buyer\'s new claim is refused STEWARD_RATE_LIMITED; its claim asked again, and another buyer, are not', async () => {
    const t = tempDir('c0-unrun-');
    let mono = 0;
    const r = await stewardRig(t.dir, TREE);
    const line = new AdmissionLine({ ports: { ...r.ports, monoClock: () => mono } as StewardPorts, ledger: r.ledger, cfg: r.cfg, accounts: r.accounts, reclaim: r.reclaim, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs });
    const ctxOf = (did: string) => ({ peer: peerIdFromDid(did), signal: new AbortController().signal, send: async (_f: CborValue) => {} });
    const admit = (j: ReturnType<typeof job>) => line.admit({ op: 'admit', job: j.bytes, entitlement: 'one', estimate: est } as never, ctxOf(j.signer) as never);
    const withdrawOf = (j: ReturnType<typeof job>) => withdraw(r.accounts, { op: 'withdraw', job: j.address }, { peer: peerIdFromDid(j.signer), send: async () => {} }, undefined, line);
    try {
      const a = P(1);
      const held = job(a, { nonce: new Uint8Array([0, 0, 1]) });
      await admit(held); // kept open: asked again below
      for (let i = 0; i < UNRUN_WITHDRAWS.burst; i++) {
        const j = job(a, { nonce: new Uint8Array([1, i, 2]) });
        await admit(j);
        await withdrawOf(j);
      }
      // before: admitted (and withdrawn) without end
      await assert.rejects(admit(job(a, { nonce: new Uint8Array([2, 0, 3]) })), (e: { code?: string; message: string }) => e.code === 'STEWARD_RATE_LIMITED' && /ask again in 2 s/.test(e.message));
      await admit(held); // asked again (its answer lost): answered, not refused
      await admit(job(P(2), { nonce: new Uint8Array([3, 0, 4]) })); // another buyer
      mono += 2_000; // a token back
      await admit(job(a, { nonce: new Uint8Array([4, 0, 5]) }));
    } finally {
      line.stop();
      await r.close();
      t.cleanup();
    }
  });
});
