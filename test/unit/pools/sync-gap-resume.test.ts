/**
 * Where a pull stopped for the period goes on in the next (second-round review q2; docs/pools.md "Catching up on the
 * trail"). Member T was down while the coordinator K dispatched and closed jobs; the other members also hand back, in
 * key order among the real ones:
 * - gap: the old dispatches of a member X that left before T joined, under a roster T never held. X is on no roster T
 *   holds, so T takes them as junk and stops the pull from that member for the period. Before, the next period listed
 *   from the trail's start again and stopped at the same entry: T never got what came after X's first entry. Now it
 *   goes on after the entry that stopped it: T holds every honest entry within X's entries + 1 periods.
 * - stale: more dispatches than SYNC_PERIOD_SKIPS by a member still on the roster, under a roster T does not hold
 *   (skipped, POOL_ROSTER_STALE). Before, the pull went on at the start of the page the skips ran out in, fetching and
 *   counting the same skipped entries again: about a page a period. Now it goes on after the last entry handled.
 * Counted in periods (the rig's fake clock moved on a period at a time), not time.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Ed25519Signer } from '../../../src/records/ed25519.js';
import type { PoolMember, PoolReply } from '../../../src/roles/pool-member/member.js';
import { SYNC_PAGE_KEYS, SYNC_PERIOD_MS, SYNC_PERIOD_SKIPS } from '../../../src/roles/pool-member/sync.js';
import { didOf, outsider, roster } from './helpers.js';
import { Rig, MEMBERS, clock, ctx, finish, job, jobChosen, keyOf, offer, r, tallyOf, type World } from './member-rig.js';

const rig = new Rig();
/** Jobs K coordinates while T is down. */
const JOBS = 30;

interface Spliced {
  key: string;
  entry: NonNullable<PoolReply['entries']>[number];
}

/** `n` failed dispatches signed by `by` under a roster of the pool T never held (`by` and two members on it), lowest keys of `pick` made. */
function oldEntries(by: Ed25519Signer, n: number, pick = n): Spliced[] {
  const x = didOf(by);
  const r0 = roster({ seq: 1, members: [...new Set([MEMBERS[1]!, MEMBERS[2]!, x])].map((did) => ({ did })), issuedAt: r.record.issuedAt - 86_400_000 });
  const out: Spliced[] = [];
  for (let i = 0; i < pick; i++) {
    const j = job().job;
    const o = offer(j, MEMBERS[1]!);
    const d = seal(T.poolDispatch, { pool: r.signer, roster: r0.address, job: j.address, offer: o.address, member: MEMBERS[1]!, coordinator: x, epoch: 1, issuedAt: clock() }, by).bytes;
    const key = `${j.address}|${x}`;
    out.push({ key, entry: { key, dispatch: d, job: j.bytes, offer: o.bytes, state: 'failed' } });
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : 1)).slice(0, n);
}

/**
 * `n` entries under keys before every real one (`sha256:000…<i>`), each carrying the same dispatch signed by `by` under
 * a roster T never held: refused by that roster before its key is looked at, so whole pages hold only these.
 */
function lowEntries(by: Ed25519Signer, n: number): Spliced[] {
  const [one] = oldEntries(by, 1);
  return Array.from({ length: n }, (_, i) => {
    const key = `sha256:${String(i).padStart(64, '0')}|${didOf(by)}`;
    return { key, entry: { ...one!.entry, key } };
  });
}

/** A world where the members other than T hand back `spliced` with their own trail (pages of SYNC_PAGE_KEYS, key order). */
async function world(name: string, spliced: Spliced[]): Promise<{ w: World; tm: PoolMember; total: number; calls: { sync: number; fetch: number } }> {
  const calls = { sync: 0, fetch: 0 };
  const ctl = { on: false, target: '' };
  const byKey = new Map(spliced.map((s) => [s.key, s]));
  const w: World = await rig.world(name, {
    intercept: async (from, to, f: Record<string, CborValue>) => {
      if (!ctl.on || from !== ctl.target || (f.op !== 'sync' && f.op !== 'fetch')) return undefined;
      const peer = w.members.get(to)!;
      calls[f.op]++;
      if (f.op === 'sync') {
        const keys: Array<{ key: string; state: string }> = [];
        let nx: string | undefined;
        do {
          const p = await peer.serve({ op: 'sync', ...(nx !== undefined ? { after: nx } : {}) }, from);
          keys.push(...(p.keys as Array<{ key: string; state: string }>));
          nx = p.next as string | undefined;
        } while (nx !== undefined);
        const after = f.after as string | undefined;
        keys.push(...spliced.filter((s) => after === undefined || s.key > after).map((s) => ({ key: s.key, state: 'failed' })));
        keys.sort((a, b) => (a.key < b.key ? -1 : 1));
        const page = keys.filter((k) => after === undefined || k.key > after).slice(0, SYNC_PAGE_KEYS);
        return { keys: page, ...(keys.filter((k) => after === undefined || k.key > after).length > SYNC_PAGE_KEYS ? { next: page.at(-1)!.key } : {}) } as PoolReply;
      }
      const asked = f.keys as string[];
      const mine = asked.filter((k) => !byKey.has(k));
      const real = mine.length ? await peer.serve({ op: 'fetch', keys: mine }, from) : { entries: [] };
      const all = [...(real.entries ?? []), ...asked.filter((k) => byKey.has(k)).map((k) => byKey.get(k)!.entry)];
      all.sort((a, b) => asked.indexOf(a.key) - asked.indexOf(b.key));
      return { entries: all };
    },
  });
  const K = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
  ctl.target = MEMBERS.find((m) => m !== K)!;
  const k = w.members.get(K)!;
  w.down.add(ctl.target);
  for (let i = 0; i < JOBS; i++) {
    const jj = jobChosen((m) => m !== ctl.target);
    const o = offer(jj.job, K);
    await finish(w, k, jj.job, o, K, k.run(jj.job, o, ctx(jj.input))).catch(() => {});
  }
  w.down.delete(ctl.target);
  const t = await tallyOf(k);
  ctl.on = true;
  return { w, tm: w.members.get(ctl.target)!, total: t.completed + t.failed + t.dispatched, calls };
}

const held = async (m: PoolMember): Promise<number> => {
  const t = await tallyOf(m);
  return t.completed + t.failed + t.dispatched;
};

/** Periods until T holds `total` entries (at most `max`): each, a new period's round of pulls. */
async function periodsToCatchUp(tm: PoolMember, total: number, max: number): Promise<number> {
  for (let p = 1; p <= max; p++) {
    clock.advance(SYNC_PERIOD_MS + 1);
    await tm.start();
    tm.stop();
    for (let i = 0; i < 3; i++) await tm.tick();
    if ((await held(tm)) >= total) return p;
  }
  return Infinity;
}

describe('a pull stopped for the period goes on after where it stopped', () => {
  after(() => rig.close());

  test('gap: the old entries of a member that left before this one joined hold back no later entry for good', async () => {
    const NX = 3;
    // Low keys: each sorts before most of the real entries.
    const { tm, total } = await world('gap-resume', oldEntries(outsider, NX, 40));
    assert.ok(total >= JOBS, `K holds the entries (${total})`);
    const periods = await periodsToCatchUp(tm, total, 3 * (NX + 1));
    assert.ok(periods <= NX + 1, `T holds all ${total} entries within ${NX + 1} periods (took ${periods}; holds ${await held(tm)})`);
  });

  test('stale: entries skipped are not fetched and counted again, period after period', async () => {
    // Whole pages of them before the real entries: the skips run out at a page's last key (before, the next period
    // began that page again: a page a period).
    const n = 4 * SYNC_PERIOD_SKIPS;
    const { tm, total, calls } = await world('stale-resume', lowEntries(keyOf(MEMBERS[2]!), n));
    // SYNC_PERIOD_SKIPS new skipped entries a period: n / SYNC_PERIOD_SKIPS periods to pass them, one for the rest.
    const bound = Math.ceil(n / SYNC_PERIOD_SKIPS) + 1;
    const periods = await periodsToCatchUp(tm, total, 4 * bound);
    assert.ok(periods <= bound, `T holds all ${total} entries within ${bound} periods (took ${periods}; holds ${await held(tm)}; calls ${JSON.stringify(calls)})`);
  });
});
