/**
 * /c0mpute/job-push/1 on the provider's side (docs/network.md §12): the push
 * is no way around the gossip flood limits. A peer may push only jobs it
 * signed itself, and only so many per second; what passes is quoted like any
 * other job.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { choosePushTargets, invitesJob, jobPushHandler, pushToSilent } from '../../../src/node/job-push.js';
import type { Network } from '../../../src/net/node.js';
import { silentLogger } from '../../../src/util/log.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import type { ServeContext } from '../../../src/net/protocols.js';
import { BUYER, GATEWAY, NOW, buyer, records } from '../records/fixtures.js';

function setup() {
  let t = NOW;
  const quoted: string[] = [];
  const handler = jobPushHandler(
    {
      clock: () => t,
      monoClock: () => t,
      skewMs: 30_000,
      quote: async (job) => {
        quoted.push(job.address);
        return undefined;
      },
      advert: () => undefined,
    },
    { ratePerSec: 1, burst: 2 },
  );
  const push = async (from: string, bytes: Uint8Array): Promise<unknown> => {
    const sent: unknown[] = [];
    const ctx = { peer: peerIdFromDid(from), signal: new AbortController().signal, send: async (f: unknown) => void sent.push(f) } as unknown as ServeContext;
    await handler([bytes], ctx);
    return sent[0];
  };
  return { push, quoted, advance: (ms: number) => (t += ms) };
}

const code = (c: string) => (e: unknown) => e instanceof C0Error && e.code === c;

test('a peer may push only a job it signed: another buyer’s job is refused before any quote', async () => {
  const s = setup();
  const job = seal(T.job, { ...records.job(), announcedAt: NOW }, buyer);
  await assert.rejects(s.push(GATEWAY, job.bytes), code('JOB_PUSH_NOT_OWN_JOB'));
  assert.deepEqual(s.quoted, []);
  assert.deepEqual(await s.push(BUYER, job.bytes), { none: 'no offer' });
  assert.deepEqual(s.quoted, [job.address]);
});

test('pushes are rate-limited per peer; the bucket refills', async () => {
  const s = setup();
  const jobs = [1, 2, 3].map((i) => seal(T.job, { ...records.job(), announcedAt: NOW - i }, buyer));
  await s.push(BUYER, jobs[0]!.bytes);
  await s.push(BUYER, jobs[1]!.bytes);
  await assert.rejects(s.push(BUYER, jobs[2]!.bytes), code('JOB_PUSH_RATE_LIMITED'));
  assert.equal(s.quoted.length, 2);
  s.advance(1_000);
  await s.push(BUYER, jobs[2]!.bytes);
  assert.equal(s.quoted.length, 3);
});

test('push targets: half to candidates with a record, connected or not; the rest connected first (record and price alternating), then connected providers without a live presence, then dials; at most maxDials dials in all', () => {
  const connected = new Set(['c1', 'c2', 'c3', 'x1', 'x2']);
  // c = connected, d = needs a dial; byPrice cheapest first, byRecord best record first
  const base = { byRecord: ['c3', 'd3'], byPrice: ['c1', 'd1', 'c2', 'd2'], connected, silentConnected: ['x1', 'x2'] };
  assert.deepEqual(choosePushTargets({ ...base, want: 2, maxDials: 2 }), ['c3', 'c1']);
  assert.deepEqual(choosePushTargets({ ...base, want: 4, maxDials: 2 }), ['c3', 'd3', 'c1', 'c2']);
  assert.deepEqual(choosePushTargets({ ...base, want: 8, maxDials: 2 }), ['c3', 'd3', 'c1', 'c2', 'x1', 'x2', 'd1']);
  assert.deepEqual(choosePushTargets({ ...base, want: 16, maxDials: 16 }), ['c3', 'd3', 'c1', 'c2', 'x1', 'x2', 'd1', 'd2']);
  assert.deepEqual(choosePushTargets({ ...base, want: 0, maxDials: 2 }), []);
  assert.deepEqual(choosePushTargets({ ...base, want: -1, maxDials: 2 }), []);
});

test('push targets: cheap adverts from fresh keys cannot take the whole push, connected or not', () => {
  const keys = ['s1', 's2', 's3', 's4'];
  const good = ['good1', 'good2'];
  // the keys are not connected
  assert.deepEqual(choosePushTargets({ want: 4, maxDials: 4, byRecord: good, byPrice: [...keys, 'good1'], connected: new Set(), silentConnected: [] }), ['good1', 'good2', 's1', 's2']);
  // the keys are connected and the providers with a record are not: half the push still goes to the record
  assert.deepEqual(choosePushTargets({ want: 4, maxDials: 2, byRecord: good, byPrice: [...keys, 'good1'], connected: new Set(keys), silentConnected: [] }), ['good1', 'good2', 's1', 's2']);
  // and the dials left after the record's are not spent on more keys
  assert.deepEqual(choosePushTargets({ want: 8, maxDials: 2, byRecord: good, byPrice: [...keys, 'good1'], connected: new Set(keys), silentConnected: [] }), ['good1', 'good2', 's1', 's2', 's3', 's4']);
});

test('jobs by invitation (docs/market.md §13): only above inviteAbove candidates, never for open orders, on a steward overlay, with offersWanted or inviteAbove 0, or with no peer connected', () => {
  const large = { steward: false, offersWanted: 8, inviteAbove: 200, openOrder: false, connected: 40, candidates: 625 };
  assert.equal(invitesJob(large), true);
  assert.equal(invitesJob({ ...large, candidates: 200 }), false, 'at the threshold: gossip');
  assert.equal(invitesJob({ ...large, candidates: 201 }), true);
  assert.equal(invitesJob({ ...large, openOrder: true }), false, 'open orders: every node computes leases from them');
  assert.equal(invitesJob({ ...large, steward: true }), false, 'the steward selects among every offer');
  assert.equal(invitesJob({ ...large, offersWanted: 0 }), false);
  assert.equal(invitesJob({ ...large, inviteAbove: 0 }), false, '0 turns invitations off');
  assert.equal(invitesJob({ ...large, connected: 0 }), false, 'no peer: gossip fails at once, as before');
});

test('a pushed pool member’s redirect is followed once, to a DID the buyer accepts, never from a redirect', async () => {
  const asked: string[] = [];
  // a and b are members naming the coordinator c; c, asked, names d (not followed); e names f, which the buyer refuses
  const answers: Record<string, unknown> = { a: { none: 'x', coordinator: 'c' }, b: { none: 'x', coordinator: 'c' }, c: { none: 'x', coordinator: 'd' }, e: { none: 'x', coordinator: 'f' } };
  const net = { request: async (did: string) => (asked.push(did), [answers[did] ?? { none: 'no offer' }]) } as unknown as Network;
  const outcomes: string[] = [];
  const job = seal(T.job, { ...records.job(), announcedAt: NOW }, buyer);
  const sent = new Set<string>();
  const n = await pushToSilent({ net, job, targets: ['a', 'b', 'e'], deadlineMs: 1000, clock: () => NOW, skewMs: 30_000, log: silentLogger(), onOffer: async () => undefined, count: (o) => outcomes.push(o), redirectOk: (_from, to) => to !== 'f', asked: sent });
  assert.equal(n, 0);
  assert.deepEqual(asked.sort(), ['a', 'b', 'c', 'e'], 'c once for both members, d never (a redirect of a redirect), f refused');
  assert.deepEqual([...sent].sort(), ['a', 'b', 'c', 'e'], 'the caller learns whom the job went to, redirects included');
  // a later push with the same set does not follow a redirect to one already asked
  asked.length = 0;
  await pushToSilent({ net, job, targets: ['b'], deadlineMs: 1000, clock: () => NOW, skewMs: 30_000, log: silentLogger(), onOffer: async () => undefined, redirectOk: () => true, asked: sent });
  assert.deepEqual(asked, ['b']);
  assert.deepEqual(outcomes.sort(), ['redirected', 'redirected', 'redirected', 'redirected']);
  // without redirectOk nothing is followed
  asked.length = 0;
  await pushToSilent({ net, job, targets: ['a'], deadlineMs: 1000, clock: () => NOW, skewMs: 30_000, log: silentLogger(), onOffer: async () => undefined });
  assert.deepEqual(asked, ['a']);
});
