/**
 * A buyer killed mid-run (kill -9, a crash) and restarted (review rvC C1): its runs died with the process, nothing
 * resumes them, and no run ended `interrupted` to withdraw its admitted claims, so each held its team's reservation and
 * devices at the steward until the job's deadline (10 minutes measured, up to 90 days). Now the buyer's start, on an
 * overlay with a steward, withdraws in the background the claims of the node's jobs an earlier process left that did
 * not end completed, each with the receipts held for it; a steward not reached is tried again with a doubling wait,
 * bounded (src/node/buyer-wiring.ts, src/roles/admission-client.ts withdrawLeftovers).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Ed25519Signer, didFromPublicKey } from '../../../src/records/index.js';
import { buyer, buyerKey, held, now } from './leftover-fixtures.js';
import { BuyerWiring } from '../../../src/node/buyer-wiring.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { silentLogger } from '../../../src/util/log.js';

const steward = didFromPublicKey(Ed25519Signer.generate().publicKey);

const later = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
  for (const t0 = Date.now(); !cond(); await later(20)) if (Date.now() - t0 > ms) assert.fail(`gave up waiting for ${what}`);
}

/** A fake overlay for BuyerWiring holding `h`'s jobs, with `steward` (or none) and a network that answers `request`. */
function overlayOf(h: ReturnType<typeof held>, request: (to: string, protocol: string, frames: Array<{ op: string; job: string; receipts?: Uint8Array[] }>) => Promise<unknown>, withSteward = true): OverlayNode {
  return {
    d: { config: { buyer: { collectWindowMs: 1000, enoughOffers: 0, policy: 'cheapest', offersWanted: 8, inviteAbove: 200 }, network: {}, overlays: [] }, identity: { signer: buyerKey }, network: withSteward ? { steward } : {} },
    did: buyer,
    name: withSteward ? 'lab' : 'public',
    clock: () => now,
    log: silentLogger(),
    registry: new Registry(),
    market: { earlierJobs: h.jobs, evidence: h.evidence },
    records: { advertOf: () => undefined, get: async () => undefined },
    net: { request },
  } as unknown as OverlayNode;
}

test("a buyer's start on an overlay with a steward withdraws the claims an earlier process left, not the completed one", async () => {
  const h = held();
  const asked: Array<{ to: string; op: string; job: string; receipts?: Uint8Array[] }> = [];
  const overlay = overlayOf(h, async (to, _protocol, frames) => {
    asked.push({ to, ...frames[0]! });
    return [{ t: 'withdrawn', released: 'yes' }];
  });
  const wiring = new BuyerWiring(overlay);
  wiring.createBuyer();
  await later(100);
  assert.equal(asked.length, 0, 'nothing asked before the network started');
  wiring.netStarted();
  try {
    await until('the withdraws', () => asked.length >= 2);
    await later(100);
    assert.deepEqual(
      asked.map((a) => [a.to, a.op, a.job]),
      [
        [steward, 'withdraw', h.broken.address],
        [steward, 'withdraw', h.silent.address],
      ],
    );
    // the late EXEC_BUYER_GONE receipt goes along, so the release charges it even if gossip missed it
    assert.deepEqual(asked[0]!.receipts, [h.gone.bytes]);
    assert.equal(asked[1]!.receipts, undefined);
  } finally {
    await wiring.stop();
  }
});

test('without a steward the start asks nothing', async () => {
  const h = held();
  let asked = 0;
  const overlay = overlayOf(h, async () => void asked++, false);
  const wiring = new BuyerWiring(overlay);
  wiring.createBuyer();
  wiring.netStarted();
  await later(500);
  await wiring.stop();
  assert.equal(asked, 0);
});

