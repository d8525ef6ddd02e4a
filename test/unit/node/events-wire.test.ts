/**
 * The control API's JSON of records (src/node/events.ts; docs/node.md "Control API"): a record's own byte fields
 * come out as lowercase hex, as the CLI prints them without a daemon, never as {"0":…,"1":…}.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventToWire, resultToWire, toWire, wireRecord } from '../../../src/node/events.js';
import { jsonReplacer } from '../../../src/cli/context.js';
import { P, job } from '../market/fixtures.js';

const nonce = new Uint8Array([234, 160, 171, 225, 209, 159, 84, 61]);

test('a job event carries the job record’s nonce as hex, the same JSON as the CLI’s in-process print', () => {
  const j = job(P(1), { nonce });
  const w = eventToWire({ e: 'job', job: j }) as unknown as { job: { record: { nonce: unknown } } };
  assert.equal(w.job.record.nonce, 'eaa0abe1d19f543d');
  // what the API sends (plain JSON.stringify) is what `c0mpute run --json` prints without a daemon (with jsonReplacer)
  assert.equal(JSON.stringify(w), JSON.stringify(w, jsonReplacer));
});

test('wireRecord converts the record itself (GET /v1/jobs, /v1/market, /v1/offers, the console use it directly)', () => {
  const w = wireRecord(job(P(2), { nonce }));
  assert.equal((w.record as { nonce: unknown }).nonce, 'eaa0abe1d19f543d');
  assert.equal(JSON.parse(JSON.stringify(w)).record.nonce, 'eaa0abe1d19f543d');
  // converting twice changes nothing (a wire record has no bytes left)
  assert.deepEqual(toWire(w), w);
});

test('a result keeps its job record’s bytes as hex; big integers become decimal strings', () => {
  const r = resultToWire({ job: job(P(3), { nonce }), status: 'no-offers', attempts: [], timings: { collectMs: 0, restMs: 0 } });
  assert.equal((r.job as { record: { nonce: unknown } }).record.nonce, 'eaa0abe1d19f543d');
  assert.deepEqual(toWire({ n: 2n ** 70n }), { n: '1180591620717411303424' });
});
