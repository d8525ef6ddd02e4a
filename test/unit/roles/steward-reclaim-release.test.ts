/**
 * The steward's usage sampling against a release (src/roles/steward-reclaim.ts): a claim released while its
 * provider's answer to `usage` is in flight (the accounts drop it and forget() runs) keeps nothing once the answer
 * comes (no figure, no samples, no idle verdict in /v1/steward), whether it was the one being asked or one asked
 * earlier in the same idle pass. Fakes: the ledger's open claims, the accounts, a network whose answers the test
 * releases.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Reclaimer, type ReclaimDeps } from '../../../src/roles/steward-reclaim.js';
import { silentLogger } from '../../../src/util/log.js';

interface Deferred {
  to: string;
  op: string;
  resolve: (frames: unknown[]) => void;
}

function rig(claims: string[]) {
  const open = new Map(claims.map((c) => [c, { claim: c, entitlement: 'e', devices: 1 }]));
  // the accounts: claim → provider, dropped at the release before forget() runs (src/roles/steward-accounts.ts)
  const tracked = new Map(claims.map((c, i) => [c, `did:key:provider${i}`]));
  const asked: Deferred[] = [];
  let arrived: () => void = () => {};
  const request = (to: string, _p: string, frames: Array<{ op: string }>) =>
    new Promise<unknown[]>((resolve) => {
      asked.push({ to, op: frames[0]!.op, resolve });
      arrived();
    });
  /** Wait until `n` requests have been made. */
  const requests = async (n: number) => {
    while (asked.length < n) await new Promise<void>((r) => (arrived = r));
    return asked[n - 1]!;
  };
  const d = {
    ports: { net: { request }, log: silentLogger(), clock: () => 0 },
    ledger: { book: { open } },
    cfg: { idle: { windowMs: 1000, idleBelowMicrowatts: 1_000_000 } },
    did: 'did:key:steward',
    accounts: { providerOf: (c: string) => tracked.get(c), get: (c: string) => (tracked.has(c) ? { claim: c } : undefined) },
    stopped: () => false,
  } as unknown as ReclaimDeps;
  const reclaim = new Reclaimer(d);
  // the release as ClaimAccounts.release does it: the accounts drop the claim, forget() runs, the ledger entry later
  const release = (c: string) => {
    tracked.delete(c);
    reclaim.forget(c);
  };
  return { reclaim, release, requests, asked };
}

const usage = (uj: number, elapsedMs: number) => [{ uj, grade: 'HwShunt', elapsedMs, units: 1 }];

test('an idle pass: a claim released while its usage answer is in flight keeps no samples and no verdict', async () => {
  const r = rig(['claim-a', 'claim-b']);
  const tick = r.reclaim.idleTick();
  (await r.requests(1)).resolve(usage(10, 100));
  // claim-b's provider is being asked: claim-b is released, then the answer comes
  const b = await r.requests(2);
  r.release('claim-b');
  b.resolve(usage(10, 100));
  await tick;
  assert.deepEqual(r.reclaim.idleVerdicts().map((v) => v.key), ['claim-a']);
  assert.equal(r.reclaim.keptClaims(), 1, 'only claim-a, still open');
});

test('an idle pass: a claim observed early and released while a later claim is asked gets no verdict', async () => {
  const r = rig(['claim-a', 'claim-b']);
  const tick = r.reclaim.idleTick();
  (await r.requests(1)).resolve(usage(10, 100));
  const b = await r.requests(2);
  r.release('claim-a');
  b.resolve(usage(10, 100));
  await tick;
  assert.deepEqual(r.reclaim.idleVerdicts().map((v) => v.key), ['claim-b']);
  assert.equal(r.reclaim.keptClaims(), 1, 'only claim-b, still open');
});

test('sampling before a preemption: a claim released while its usage answer is in flight keeps no figure', async () => {
  const r = rig(['claim-a', 'claim-b']);
  const sampled = r.reclaim.sampleRunning();
  const [a, b] = [await r.requests(1), await r.requests(2)];
  r.release('claim-b');
  a.resolve(usage(5, 50));
  b.resolve(usage(5, 50));
  await sampled;
  assert.equal(r.reclaim.keptClaims(), 1, 'only claim-a, still open');
  // and what a released claim had is dropped at its release
  r.release('claim-a');
  assert.equal(r.reclaim.keptClaims(), 0);
});
