/**
 * A member that keeps another pulling with entries built to be skipped rather than to stop the pull (fourth-round
 * review; docs/pools.md "Catching up on the trail"). The hostile member C answers every `op: sync` with a page of fresh
 * keys and a `next`, and every `op: fetch` with one entry under the first key asked, padded so that the answer weighs
 * at least half of SYNC_FETCH_BYTES (so a puller that took it as cut by the byte bound would advance one key a fetch):
 * - a dispatch signed by a key on no roster A holds, naming a roster nobody holds (POOL_ROSTER_STALE before), or naming
 *   the pool's roster (POOL_NOT_MEMBER, a view refusal before), or another pool: junk, the pull stops at the first;
 * - a dispatch C signs itself naming a roster nobody holds (a member's, so skipped): the pull stops for the period once
 *   C handed back SYNC_PERIOD_BYTES or SYNC_PERIOD_SKIPS;
 * - pages whose pull the step's time bound always cuts: at most SYNC_PERIOD_PAGES listings a period.
 * Counted in calls, not time (the rig's fake clock stands for elapsed time; moved on inside a call to cut a step).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { C0Error } from '../../../src/errors.js';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Ed25519Signer } from '../../../src/records/ed25519.js';
// As a namespace: the bounds this test is about did not exist before (the test loads, and fails, without them).
import * as sync from '../../../src/roles/pool-member/sync.js';
import type { PoolReply } from '../../../src/roles/pool-member/member.js';
import { signerFrom } from '../records/fixtures.js';
import { didOf } from './helpers.js';
import { Rig, MEMBERS, clock, job, keyOf, offer, r, type RigOptions } from './member-rig.js';

const { SYNC_FETCH_BYTES, SYNC_FETCH_KEYS, SYNC_PAGE_KEYS, SYNC_PERIOD_MS, SYNC_PERIOD_PAGES, SYNC_START_LIVENESS, SYNC_PERIOD_BYTES, SYNC_PERIOD_SKIPS } = sync;
const rig = new Rig();
const [A, , C] = MEMBERS as [string, string, string];
const LIVENESS = 1000;
/** Calls past this many the hostile member leaves unanswered: without the bounds, A would pull for ever. */
const GIVE_UP = 3_000;
const stranger = signerFrom(47);
const hex = (): string => randomBytes(32).toString('hex');
/** Half the byte bound a side: an answer of one entry weighs more than SYNC_FETCH_BYTES / 2. */
const pad = new Uint8Array(SYNC_FETCH_BYTES / 2).fill(7);

function dispatchBy(by: Ed25519Signer, o: { pool?: string; roster?: string } = {}): Uint8Array {
  return seal(T.poolDispatch, { pool: o.pool ?? r.signer, roster: o.roster ?? `sha256:${hex()}`, job: `sha256:${hex()}`, offer: `sha256:${hex()}`, member: A, coordinator: didOf(by), epoch: 1, issuedAt: clock() }, by).bytes;
}

function endlessPage(n: number): PoolReply {
  const base = `sha256:${String(n).padStart(8, '0')}`;
  const keys = Array.from({ length: SYNC_PAGE_KEYS }, () => ({ key: `${base}${randomBytes(28).toString('hex')}|${C}`, state: 'failed' })).sort((x, y) => (x.key < y.key ? -1 : 1));
  return { keys, next: keys[keys.length - 1]!.key };
}

function hostile(fetch: (keys: string[]) => PoolReply) {
  const seen = { sync: 0, fetch: 0, bytes: 0, warns: 0 };
  const log = pino({ level: 'debug' }, { write: (line: string) => void (JSON.parse(line).level >= 40 && seen.warns++) });
  const opts: RigOptions = {
    intercept: async (from, to, f: Record<string, CborValue>) => {
      if (from !== A || to !== C || (f.op !== 'sync' && f.op !== 'fetch')) return undefined;
      if (seen.sync + seen.fetch >= GIVE_UP) throw new C0Error('NET_TIMEOUT', 'the hostile member gave up');
      if (f.op === 'sync') return endlessPage(++seen.sync);
      seen.fetch++;
      const a = fetch(f.keys as string[]);
      for (const e of a.entries ?? []) seen.bytes += e.dispatch.length + e.job.length + e.offer.length;
      return a;
    },
    extra: (did) => (did === A ? { log } : {}),
  };
  return { seen, opts };
}

const padded = (dispatch: () => Uint8Array) => (keys: string[]): PoolReply => ({ entries: [{ key: keys[0]!, dispatch: dispatch(), job: pad, offer: pad, state: 'failed' }] });

describe('a member that hands back entries built to be skipped is held within bounds', () => {
  after(() => rig.close());

  // The roster nobody holds is refused before its job and offer are opened (padding); the others are opened first (a
  // well-formed job and offer, so that the refusal is the dispatch's signer or pool).
  const jj = job().job;
  const wellFormed = (dispatch: () => Uint8Array) => (keys: string[]): PoolReply => ({ entries: [{ key: keys[0]!, dispatch: dispatch(), job: jj.bytes, offer: offer(jj, C).bytes, state: 'failed' }] });
  for (const [name, answer] of [
    ['a throwaway key naming a roster nobody holds', padded(() => dispatchBy(stranger))],
    ['a throwaway key naming the roster in use', wellFormed(() => dispatchBy(stranger, { roster: r.address }))],
    ['a throwaway key naming another pool', wellFormed(() => dispatchBy(stranger, { pool: didOf(stranger), roster: r.address }))],
    ['a member’s key, another pool', wellFormed(() => dispatchBy(keyOf(C), { pool: didOf(stranger), roster: r.address }))],
  ] as Array<[string, (keys: string[]) => PoolReply]>) {
    test(`${name}: junk, the pull stops at the first fetch`, async () => {
      const { seen, opts } = hostile(answer);
      const w = await rig.world(`junk-view-${seen.sync}-${name.length}-${hex().slice(0, 6)}`, opts);
      const a = w.members.get(A)!;
      assert.equal(seen.fetch, 1, `one fetch, one junk entry: C is not pulled from any more (${seen.fetch} fetches)`);
      for (let i = 0; i < 3; i++) await a.tick();
      assert.equal(seen.fetch, 1, 'the ticks after ask C nothing');
      assert.ok(seen.warns <= 2, `the junk said once, and the step's summary (${seen.warns} warn lines)`);
    });
  }

  test('a member’s own dispatches naming a roster nobody holds: skipped, within the period’s bytes and skips', async () => {
    const { seen, opts } = hostile(padded(() => dispatchBy(keyOf(C))));
    const w = await rig.world('junk-view-skips', opts);
    const a = w.members.get(A)!;
    for (let i = 0; i < 3; i++) await a.tick();
    const answer = 2 * pad.length + 400;
    assert.ok(seen.fetch < GIVE_UP / 2, `not pulled for ever (${seen.fetch} fetches, ${seen.sync} pages)`);
    assert.ok(seen.bytes <= SYNC_PERIOD_BYTES + answer, `within the period's bytes (${seen.bytes})`);
    assert.ok(seen.fetch <= SYNC_PERIOD_SKIPS, `within the period's skips (${seen.fetch} fetches)`);
    // Nothing kept: none of an answer is taken as cut by the byte bound, so a fetch goes on past its whole batch.
    assert.ok(seen.fetch <= seen.sync * (SYNC_PAGE_KEYS / SYNC_FETCH_KEYS), `one fetch a batch (${seen.fetch} fetches, ${seen.sync} pages)`);
    const before = seen.fetch;
    clock.advance(SYNC_PERIOD_MS);
    await a.start();
    a.stop();
    assert.ok(seen.fetch > before, 'pulled from again the next period');
  });

  test('entries only skipped, step after step: said at debug, no warn line', async () => {
    const { seen, opts } = hostile((keys) => {
      // Each fetch takes more than a step's time: the page is asked again at the next step.
      clock.advance(SYNC_START_LIVENESS * LIVENESS + 1);
      return padded(() => dispatchBy(keyOf(C)))(keys);
    });
    const w = await rig.world('junk-view-quiet', opts);
    const a = w.members.get(A)!;
    for (let i = 0; i < 5; i++) {
      await a.serve({ op: 'ping', seq: r.record.seq }, C);
      await a.tick();
    }
    assert.ok(seen.fetch >= 5, `a skipped entry each step (${seen.fetch} fetches)`);
    assert.equal(seen.warns, 0, 'entries skipped are not warned of');
  });

  test('pages whose pull the step’s time always cuts: at most SYNC_PERIOD_PAGES listings a period', async () => {
    const { seen, opts } = hostile(() => {
      // Each fetch takes more than a step's time: the page is asked again at the next step.
      clock.advance(SYNC_START_LIVENESS * LIVENESS + 1);
      return { entries: [] };
    });
    const w = await rig.world('junk-view-again', opts);
    const a = w.members.get(A)!;
    for (let i = 0; i < SYNC_PERIOD_PAGES + 10 && seen.sync + seen.fetch < GIVE_UP; i++) {
      await a.serve({ op: 'ping', seq: r.record.seq }, C);
      await a.tick();
    }
    assert.ok(seen.sync <= SYNC_PERIOD_PAGES, `${seen.sync} pages listed this period`);
    assert.equal(seen.fetch, seen.sync, 'one fetch a listing, each cut short');
  });
});
