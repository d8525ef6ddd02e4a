/**
 * A member that keeps another pulling (second-round review; docs/pools.md "Catching up on the trail"): one that answers
 * every `op: sync` with a page of fresh keys and a `next`, and every `op: fetch` with junk or with nothing, holds the
 * puller within bounds: past an entry that does not check out it is not pulled from for the rest of the period (one
 * warn line, not one an entry); keys a fetch answer leaves out count as absent (on past the batch asked); and it lists at
 * most SYNC_PERIOD_PAGES pages a period, the next period going on from where it stopped. Three members over their own
 * stores (member-rig.ts; its fake clock stands for elapsed time, so the start's time bound never runs out by itself).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { C0Error } from '../../../src/errors.js';
import { pino } from 'pino';
import { SYNC_FETCH_KEYS, SYNC_PAGE_KEYS, SYNC_PERIOD_MS, SYNC_PERIOD_PAGES } from '../../../src/roles/pool-member/sync.js';
import type { PoolReply } from '../../../src/roles/pool-member/member.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { Rig, MEMBERS, clock, type RigOptions } from './member-rig.js';

const rig = new Rig();
const [A, , C] = MEMBERS as [string, string, string];
/** Calls past this many the hostile member leaves unanswered: without the bounds, A would pull for ever. */
const GIVE_UP = 3_000;

/** A page of SYNC_PAGE_KEYS fresh keys of C's, in order, after `after`, with a `next`. */
function endlessPage(n: number): PoolReply {
  const base = `sha256:${String(n).padStart(8, '0')}`;
  const keys = Array.from({ length: SYNC_PAGE_KEYS }, () => ({ key: `${base}${randomBytes(28).toString('hex')}|${C}`, state: 'failed' })).sort((x, y) => (x.key < y.key ? -1 : 1));
  return { keys, next: keys[keys.length - 1]!.key };
}

function hostile(fetch: (keys: string[]) => PoolReply) {
  const seen = { sync: 0, fetch: 0, afters: [] as Array<string | undefined>, nexts: [] as string[], warns: 0 };
  const log = pino({ level: 'debug' }, { write: (line: string) => void (JSON.parse(line).level >= 40 && seen.warns++) });
  const opts: RigOptions = {
    intercept: async (from, to, f: Record<string, CborValue>) => {
      if (from !== A || to !== C || (f.op !== 'sync' && f.op !== 'fetch')) return undefined;
      if (seen.sync + seen.fetch >= GIVE_UP) throw new C0Error('NET_TIMEOUT', 'the hostile member gave up');
      if (f.op === 'sync') {
        seen.afters.push(f.after as string | undefined);
        const page = endlessPage(++seen.sync);
        seen.nexts.push(page.next!);
        return page;
      }
      seen.fetch++;
      return fetch(f.keys as string[]);
    },
    extra: (did) => (did === A ? { log } : {}),
  };
  return { seen, opts };
}

describe('a member that keeps another pulling is held within bounds', () => {
  after(() => rig.close());

  test('junk handed back: not pulled from for the rest of the period, one warn line, and pulled from again the next', async () => {
    const junk = new Uint8Array(100).fill(7);
    const { seen, opts } = hostile((keys) => ({ entries: [{ key: keys[0]!, dispatch: junk, job: junk, offer: junk, state: 'failed' }] }));
    const w = await rig.world('hostile-junk', opts);
    const a = w.members.get(A)!;
    assert.equal(seen.fetch, 1, `one fetch, one junk entry: C is not pulled from any more (${seen.fetch} fetches)`);
    assert.ok(seen.warns <= 2, `the junk said once, and the step's summary (${seen.warns} warn lines)`);
    const before = { ...seen };
    for (let i = 0; i < 3; i++) await a.tick();
    assert.deepEqual([seen.sync, seen.fetch], [before.sync, before.fetch], 'the ticks after ask C nothing');
    // The next period: every live member is pulled from again (A's own round of pings, then its step).
    clock.advance(SYNC_PERIOD_MS);
    await a.start();
    a.stop();
    assert.equal(seen.fetch, before.fetch + 1, 'asked again once the next period');
  });

  test('keys a fetch leaves out count as absent, and a member lists at most SYNC_PERIOD_PAGES pages a period', async () => {
    const { seen, opts } = hostile(() => ({ entries: [] }));
    const w = await rig.world('hostile-empty', opts);
    const a = w.members.get(A)!;
    assert.equal(seen.sync, SYNC_PERIOD_PAGES, `pages listed at the start (${seen.sync})`);
    assert.equal(seen.fetch, (SYNC_PERIOD_PAGES * SYNC_PAGE_KEYS) / SYNC_FETCH_KEYS, `one fetch a batch of keys (${seen.fetch})`);
    assert.equal(seen.warns, 0, 'nothing to warn about: the keys are absent');
    const before = { ...seen };
    for (let i = 0; i < 3; i++) await a.tick();
    assert.deepEqual([seen.sync, seen.fetch], [before.sync, before.fetch], 'the ticks after ask C nothing');
    clock.advance(SYNC_PERIOD_MS);
    await a.start();
    a.stop();
    assert.equal(seen.afters[before.sync], seen.nexts[before.sync - 1], 'the next period goes on from the last page listed');
    assert.equal(seen.sync, 2 * SYNC_PERIOD_PAGES);
  });
});
