/**
 * This node's own records reach only the handlers subscribed with `own` (src/net/dispatch.ts, Network.subscribe): the
 * steward hears its own provider's receipts and its own buyer's selections there (QA qaWit F1), and every other
 * handler (the market's evidence, the buyer's own receipt hook, the quoting of jobs) sees only what peers sent, as
 * before. markOwn says whether a record was new here, so one already accepted from a peer is not handed again.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Dispatcher } from '../../../src/net/dispatch.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { silentLogger } from '../../../src/util/log.js';
import { seal, T } from '../../../src/records/index.js';
import { provider, records } from '../records/fixtures.js';

const rec = seal(T.receipt, records.receipt(), provider);

test('a record pushed as this node’s own reaches only the handlers subscribed with `own`; a peer’s reaches both', async () => {
  const d = new Dispatcher({ metrics: createNetMetrics(new Registry()), log: silentLogger() });
  const plain: string[] = [];
  const own: string[] = [];
  d.subscribe('receipt', (_r, m) => void plain.push(m.source));
  const off = d.subscribe('receipt', (_r, m) => void own.push(m.source), { own: true });
  assert.equal(d.takesOwn('receipt'), true);
  assert.equal(d.takesOwn('selection'), false);
  d.push(rec, { kind: 'receipt', from: 'me', source: 'own', attachments: [] });
  d.push(rec, { kind: 'receipt', from: 'peer', source: 'gossip', attachments: [] });
  await d.drained();
  assert.deepEqual(plain, ['gossip']);
  assert.deepEqual(own, ['own', 'gossip']);
  off();
  assert.equal(d.takesOwn('receipt'), false);
});

test('markOwn tells whether the record was new here: one accepted before (from a peer) is not new', () => {
  const p = new RecordPipeline({ metrics: createNetMetrics(new Registry()), log: silentLogger() });
  assert.equal(p.markOwn('receipt', rec), true);
  assert.equal(p.markOwn('receipt', rec), false);
});
