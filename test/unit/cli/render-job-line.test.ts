/**
 * `c0mpute run`'s "▸ job … published" line (src/cli/render.ts) prints the job's whole address, as `c0mpute jobs`
 * does, so it can be pasted into `c0mpute offers` or `c0mpute market export --job` (before, it was shortened).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderEvent } from '../../../src/cli/render.js';

test('the job line names the whole job address', () => {
  const address = 'sha256:' + '3f'.repeat(32);
  const lines: string[] = [];
  renderEvent({ e: 'job', job: { address, record: { workload: 'exec.echo', maxPrice: { amount: '0.05', currency: 'USD' }, deadline: 61_000, announcedAt: 1_000 } } }, undefined, (s) => lines.push(s));
  assert.equal(lines.length, 1);
  assert.ok(lines[0]!.startsWith(`▸ job ${address} published: exec.echo`), lines[0]);
});

test('a run the steward keeps waiting (STEWARD_RATE_LIMITED) says so in one line (review s43 R1 F4: 18.8 s of nothing)', () => {
  const lines: string[] = [];
  renderEvent({ e: 'admission-wait', code: 'STEWARD_RATE_LIMITED', waitMs: 4_200 }, undefined, (s) => lines.push(s));
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /STEWARD_RATE_LIMITED: too many of its claims were withdrawn without running lately\); asking again in 5 s/);
});

test('a first-claim selection is narrated in claims, an auction’s in offers (QA qaOrd F6: "1 offer considered" on every order)', () => {
  const lines: string[] = [];
  const sel = (policy: string, n: number) => ({ address: 'sha256:' + 'ab'.repeat(32), record: { policy, considered: [{ provider: 'did:key:z6Mkp', offer: 'sha256:' + 'cd'.repeat(32) }], ...(policy === 'first-claim' ? { arrivals: Array.from({ length: n }, () => ({})) } : {}) } });
  renderEvent({ e: 'selection', selection: sel('first-claim', 2), winner: { provider: 'did:key:z6Mkp' }, attempt: 1 } as never, (d) => d, (s) => lines.push(s));
  renderEvent({ e: 'selection', selection: sel('first-claim', 1), winner: { provider: 'did:key:z6Mkp' }, attempt: 1 } as never, (d) => d, (s) => lines.push(s));
  renderEvent({ e: 'selection', selection: sel('cheapest', 0), winner: { provider: 'did:key:z6Mkp' }, attempt: 1 } as never, (d) => d, (s) => lines.push(s));
  assert.match(lines[0]!, /winner did:key:z6Mkp, 2 claims considered$/);
  assert.match(lines[1]!, /winner did:key:z6Mkp, 1 claim considered$/);
  assert.match(lines[2]!, /winner did:key:z6Mkp, 1 offer considered$/);
});
