/**
 * job-push/1 charges a flooding peer to the network's abuse score (review s39 F3, s40; docs/network.md §Abuse): every
 * push takes a rate token first, a malformed one too; a push refused for the rate is free up to a looser excess rate (a
 * buyer does not pace) and reported past it; a frame that is not bytes (JOB_PUSH_BAD_REQUEST) or not a valid envelope
 * (junk bytes, a bad signature) is a strike (`AbuseReports.invalid`); another type or another's job is free up to
 * REFUSED_RATE. An honest push, and an honest refusal (a stale job, no offer), costs nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AbuseReports } from '../../../src/net/peer-abuse.js';
import { C0Error } from '../../../src/errors.js';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { jobPushHandler } from '../../../src/node/job-push.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import type { ServeContext } from '../../../src/net/protocols.js';
import { BUYER, GATEWAY, NOW, buyer, records } from '../records/fixtures.js';

function setup() {
  const reported: string[] = [];
  const struck: string[] = [];
  let quotes = 0;
  const handler = jobPushHandler(
    {
      clock: () => NOW,
      monoClock: () => NOW,
      skewMs: 30_000,
      quote: async () => void quotes++,
      advert: () => undefined,
      // the whole AbuseReports surface, so a report of any kind would show (the handler is given `invalid` only)
      abuse: { report: (p: string) => void reported.push(p), invalid: (p: string) => void struck.push(p) } as Pick<AbuseReports, 'invalid' | 'report'>,
    },
    { ratePerSec: 1, burst: 3 },
    { ratePerSec: 1, burst: 4 },
  );
  const push = async (from: string, frame: CborValue): Promise<string | undefined> => {
    const ctx = { peer: peerIdFromDid(from), signal: new AbortController().signal, send: async () => {} } as unknown as ServeContext;
    try {
      await handler([frame], ctx);
      return undefined;
    } catch (e) {
      return e instanceof C0Error ? e.code : String(e);
    }
  };
  return { push, reported, struck, quotes: () => quotes };
}

test('a frame that is not a job envelope is a strike, and takes a rate token first', async () => {
  const s = setup();
  const me = peerIdFromDid(BUYER).toString();
  assert.equal(await s.push(BUYER, { op: 'x' } as CborValue), 'JOB_PUSH_BAD_REQUEST');
  assert.equal(await s.push(BUYER, 7), 'JOB_PUSH_BAD_REQUEST');
  assert.deepEqual(s.struck, [me, me]);
  assert.deepEqual(s.reported, []);
  const job = seal(T.job, { ...records.job(), announcedAt: NOW }, buyer);
  assert.equal(await s.push(BUYER, job.bytes), undefined, 'the third token');
  // the burst is spent by the malformed pushes too: the next one is refused for the rate (not reported within the
  // excess rate: an honest busy buyer does not pace its pushes per provider)
  assert.equal(await s.push(BUYER, { op: 'x' } as CborValue), 'JOB_PUSH_RATE_LIMITED');
  assert.equal(await s.push(BUYER, job.bytes), 'JOB_PUSH_RATE_LIMITED');
  assert.deepEqual(s.reported, []);
  assert.equal(s.struck.length, 2, 'a push refused for the rate is not a strike');
});

test('pushes far past the rate are reported once past the excess rate', async () => {
  const s = setup();
  const me = peerIdFromDid(BUYER).toString();
  const job = seal(T.job, { ...records.job(), announcedAt: NOW }, buyer);
  const codes: Array<string | undefined> = [];
  for (let i = 0; i < 10; i++) codes.push(await s.push(BUYER, job.bytes));
  assert.deepEqual(codes.slice(3), Array(7).fill('JOB_PUSH_RATE_LIMITED'));
  // 3 within the rate, 4 over it free (the excess burst), each of the last 3 reported; never a strike
  assert.deepEqual(s.reported, [me, me, me]);
  assert.deepEqual(s.struck, []);
});

test('junk bytes and a forged signature are strikes; a record of another type is free within the refused rate', async () => {
  const s = setup();
  const me = peerIdFromDid(BUYER).toString();
  assert.equal(await s.push(BUYER, new Uint8Array([1, 2, 3, 4])), 'ENVELOPE_MALFORMED');
  const job = seal(T.job, { ...records.job(), announcedAt: NOW }, buyer);
  const forged = Uint8Array.from(job.bytes);
  forged[forged.length - 1]! ^= 1;
  assert.equal(await s.push(BUYER, forged), 'ENVELOPE_BAD_SIGNATURE');
  assert.deepEqual(s.struck, [me, me], 'no node sends either');
  const offer = seal(T.offer, records.offer(), buyer);
  assert.equal(await s.push(BUYER, offer.bytes), 'RECORD_WRONG_TYPE');
  assert.deepEqual(s.struck, [me, me], 'a well-formed record of another type: what a newer peer may send');
  assert.deepEqual(s.reported, []);
});

test('honest pushes and honest refusals cost nothing', async () => {
  const s = setup();
  const job = seal(T.job, { ...records.job(), announcedAt: NOW }, buyer);
  assert.equal(await s.push(BUYER, job.bytes), undefined);
  assert.equal(await s.push(GATEWAY, job.bytes), 'JOB_PUSH_NOT_OWN_JOB');
  assert.equal(s.quotes(), 1);
  assert.deepEqual(s.reported, []);
  assert.deepEqual(s.struck, []);
});
