/**
 * Each run log the console hub keeps is bounded (docs/console.md "Live updates"): at most runEvents events and
 * runBytes of event JSON, progress dropped first (then offers), the latest event always kept, the rest counted in
 * `omitted`. Before, every event of the last 50 runs was kept whole.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConsoleHub, HUB_DEFAULTS } from '../../../src/node/console-hub.js';
import type { Daemon } from '../../../src/node/daemon.js';

function hub() {
  return new ConsoleHub({ overlays: new Map(), clock: () => 1 } as unknown as Daemon);
}

test('a run flooded with progress events keeps its other events, within the event and byte bounds', () => {
  const h = hub();
  const live = h.beginRun('public');
  live.event({ e: 'job', job: { address: 'sha256:aa' } });
  live.event({ e: 'decision', policy: 'balanced' });
  live.event({ e: 'selection', attempt: 1 });
  for (let i = 0; i < 20_000; i++) live.event({ e: 'progress', provider: 'did:key:z', message: `${i} ${'x'.repeat(190)}` });
  live.event({ e: 'receipt' });
  live.end();
  const log = h.runs[0]!;
  assert.ok(log.events.length <= HUB_DEFAULTS.runEvents, `${log.events.length} events`);
  assert.ok(JSON.stringify(log.events).length <= HUB_DEFAULTS.runBytes + 1000, 'within the byte bound');
  assert.deepEqual(log.events.slice(0, 3).map((e) => e.e), ['job', 'decision', 'selection']);
  assert.equal(log.events.at(-1)!.e, 'receipt');
  assert.match(String(log.events.at(-2)!.message), /^19999 /, 'the latest progress stays');
  assert.equal(log.omitted + log.events.length, 20_004);
  assert.equal(log.job, 'sha256:aa');
});

test('large events are bounded by bytes too, the latest kept', () => {
  const h = hub();
  const live = h.beginRun('public');
  for (let i = 0; i < 100; i++) live.event({ e: 'verified', detail: 'y'.repeat(50_000) });
  const log = h.runs[0]!;
  assert.ok(log.events.length <= Math.ceil(HUB_DEFAULTS.runBytes / 50_000), `${log.events.length} events`);
  assert.equal(log.omitted + log.events.length, 100);
});
