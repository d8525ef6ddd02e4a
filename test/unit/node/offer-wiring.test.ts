/**
 * A provider's offer its buyer (or the overlay's steward) did not take is said in the provider's log, with the code
 * (src/node/offer-wiring.ts; QA witness pass #6: the offer was lost on the way, logged at debug only, and the buyer
 * said the provider "has not quoted"). Once per recipient and code, then a summary (PeerLog).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { offerToBuyer } from '../../../src/node/offer-wiring.js';
import { PeerLog } from '../../../src/util/peer-log.js';
import type { Network } from '../../../src/net/node.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { OfferSendOutcome } from '../../../src/net/offer-route.js';

const BUYER = 'did:key:z6MkBuyer';
const STEWARD = 'did:key:z6MkSteward';

function rig(outcomes: Record<string, OfferSendOutcome>, codes: Record<string, string>) {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const net = { did: 'did:key:z6MkProvider', sendOffer: async () => ({ outcomes, codes, address: 'sha256:00' }) } as unknown as Network;
  return { lines, log, net, missed: new PeerLog({ log, clock: () => 0 }) };
}

const offer = { address: 'sha256:0ffe', bytes: new Uint8Array([1]) } as Opened;

test('an offer that did not reach the buyer is a warning with the code and the recipient; once per recipient and code', async () => {
  const { lines, log, net, missed } = rig({ [BUYER]: 'unreachable', [STEWARD]: 'accepted' }, { [BUYER]: 'NET_DEADLINE' });
  assert.equal(await offerToBuyer(net, offer, undefined, BUYER, STEWARD, log, missed), 1);
  assert.equal(lines.length, 1);
  const l = lines[0]!;
  assert.deepEqual({ level: l.level, code: l.code, peer: l.peer, offer: l.offer, outcome: l.outcome }, { level: 40, code: 'NET_DEADLINE', peer: BUYER, offer: offer.address, outcome: 'unreachable' });
  assert.match(String(l.msg), /^an offer did not reach the job's buyer/);
  await offerToBuyer(net, offer, undefined, BUYER, STEWARD, log, missed);
  assert.equal(lines.length, 1, 'the same again is held for the summary');
  missed.stop();
  assert.equal(lines.at(-1)!.more, 1);
});

test("the steward's refusal is said as the steward's, with its error code", async () => {
  const { lines, log, net, missed } = rig({ [BUYER]: 'accepted', [STEWARD]: 'rejected' }, { [STEWARD]: 'OFFER_EXPIRED' });
  assert.equal(await offerToBuyer(net, offer, undefined, BUYER, STEWARD, log, missed), 1);
  assert.equal(lines.length, 1);
  assert.deepEqual({ code: lines[0]!.code, peer: lines[0]!.peer, msg: lines[0]!.msg }, { code: 'OFFER_EXPIRED', peer: STEWARD, msg: "the overlay's steward refused an offer" });
});

test('an offer every recipient took writes nothing', async () => {
  const { lines, log, net, missed } = rig({ [BUYER]: 'accepted', [STEWARD]: 'ignored' }, {});
  assert.equal(await offerToBuyer(net, offer, undefined, BUYER, STEWARD, log, missed), 2);
  missed.stop();
  assert.equal(lines.length, 0);
});

test('an offer the buyer dropped as from its future says this machine’s clock is ahead (QA qaPnet F2: a provider 45 s ahead heard nothing)', async () => {
  const { lines, log, net, missed } = rig({ [BUYER]: 'ignored', [STEWARD]: 'ignored' }, { [BUYER]: 'RECORD_FROM_FUTURE', [STEWARD]: 'RECORD_EXPIRED' });
  assert.equal(await offerToBuyer(net, offer, undefined, BUYER, STEWARD, log, missed), 0, 'neither took it');
  assert.deepEqual(
    lines.map((l) => [l.level, l.code, l.peer]),
    [
      [40, 'RECORD_FROM_FUTURE', BUYER],
      [40, 'RECORD_EXPIRED', STEWARD],
    ],
  );
  assert.match(String(lines[0]!.msg), /^the job's buyer dropped an offer as dated in its future \(RECORD_FROM_FUTURE\): this machine's clock is ahead .* fix this machine's clock \(NTP\)$/);
  missed.stop();
});

test('an offer ignored as a duplicate (already held) is taken, and says nothing', async () => {
  const { lines, log, net, missed } = rig({ [BUYER]: 'ignored' }, { [BUYER]: 'DUPLICATE' });
  assert.equal(await offerToBuyer(net, offer, undefined, BUYER, undefined, log, missed), 1);
  missed.stop();
  assert.equal(lines.length, 0);
});
