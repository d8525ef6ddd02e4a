/**
 * Outcome catch-up over real libp2p nodes on 127.0.0.1 (src/net/records-sync.ts `catchUp`, records/1 `live` `since`;
 * docs/network.md §5 "Catching up on outcomes"; review C2): a node that counts outcomes is stopped while the market
 * goes on; restarted with the same key, it gets from the first peer it connects to the receipts and acceptances
 * published while it was away, and not those it heard before its stop. Before, the sync on connect asked adverts and
 * presence only, and the outcomes it missed never came.
 */
import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import { OUTCOME_EVIDENCE_KINDS } from '../../src/node/markets.js';
import type { Opened } from '../../src/records/index.js';
import { P, acceptance, job, offer, receipt } from '../unit/market/fixtures.js';
import { link, sleep, startNode, stopAll, waitFor } from './net-helpers.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

const provider = P(21);
const buyer = P(1);
const advert = 'sha256:' + '31'.repeat(32);

function outcome(i: number): { receipt: Opened; acceptance: Opened; workload: string } {
  const j = job(buyer, { nonce: new Uint8Array([i >> 8, i & 255, 5]) });
  const r = receipt(provider, buyer, offer(provider, j, advert), { energy: { uj: 1000 + i, grade: 'Estimator' } });
  return { receipt: r, acceptance: acceptance(buyer, r, 'accepted'), workload: j.record.workload };
}

test('a node stopped while 40 jobs ended catches up their receipts and acceptances from the first peer it reconnects to', async () => {
  const a = await startNode();
  const relay = await startNode();
  nets.push(a, relay);
  await link(a, relay, ['receipt', 'acceptance']);
  const catchUp = { kinds: [...OUTCOME_EVIDENCE_KINDS], from: Date.now() - 60_000 };
  let b = await startNode({ catchUp });
  nets.push(b);
  const heard = new Set<string>();
  const listen = (n: Network) => {
    for (const k of ['receipt', 'acceptance'] as const) n.subscribe(k, (r) => void heard.add(r.address));
  };
  listen(b);
  await link(b, a, ['receipt', 'acceptance']);

  // before the stop: heard live
  const early = [0, 1, 2].map(outcome);
  for (const o of early) {
    await a.publish('receipt', o.receipt.bytes, [], { workload: o.workload });
    await a.publish('acceptance', o.acceptance.bytes, [], { workload: o.workload });
  }
  await waitFor(() => heard.size === 6, 5_000, 'the outcomes before the stop');

  // stopped (its key kept): 40 jobs end meanwhile
  const signer = b.signer;
  await b.stop();
  nets.splice(nets.indexOf(b), 1);
  await sleep(5);
  const stoppedAt = Date.now();
  const missed = Array.from({ length: 40 }, (_, i) => outcome(100 + i));
  for (const o of missed) {
    await a.publish('receipt', o.receipt.bytes, [], { workload: o.workload });
    await a.publish('acceptance', o.acceptance.bytes, [], { workload: o.workload });
  }

  // back, from the time it stopped (the overlay gives the newest outcome it holds, less a margin)
  heard.clear();
  b = await startNode({ catchUp: { ...catchUp, from: stoppedAt } }, signer);
  nets.push(b);
  listen(b);
  await b.dial(a.addrs()[0]!);
  await waitFor(() => heard.size >= 80, 10_000, 'the 40 receipts and 40 acceptances missed');
  for (const o of missed) assert.ok(heard.has(o.receipt.address) && heard.has(o.acceptance.address));
  for (const o of early) assert.ok(!heard.has(o.receipt.address), 'not what it heard before it stopped: since is the time it left');
});
