/**
 * A selected provider that sends what breaks exec/1 is signed the non-delivery that says so (src/roles/buyer.ts
 * attempt): a frame that is not an exec frame, or more output than the buyer takes, is `no-receipt` (it answered,
 * without a receipt); a receipt frame whose bytes do not open is `bad-receipt`. Before, each was `unreachable`,
 * "provider unreachable or gone: EXEC_BAD_FRAME" (review s40 B F2): the signed record told everyone a link had failed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NonDelivery, Opened } from '../../../src/records/index.js';
import { C0Error } from '../../../src/errors.js';
import { NOW, P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(780);
const A = P(781);

async function answered(frames: () => AsyncGenerator<unknown>): Promise<Array<Opened<NonDelivery>>> {
  const f = buyerOnFakes(ME, { providers: [A], exec: frames as never });
  await f.buyer.run(fakeSpec());
  return f.nondeliveries().map((p) => p.rec as Opened<NonDelivery>);
}

test('a frame that is not an exec frame: no-receipt, naming EXEC_BAD_FRAME', async () => {
  const nds = await answered(async function* () {
    yield { t: 'accepted', startedAt: NOW };
    yield { t: 'output', data: 42 };
  });
  assert.equal(nds.length, 1);
  assert.equal(nds[0]!.record.reason, 'no-receipt');
  assert.match(nds[0]!.record.detail ?? '', /EXEC_BAD_FRAME/);
});

test('more output than the buyer takes (the stream ends EXEC_OUTPUT_TOO_LARGE here): no-receipt', async () => {
  const nds = await answered(async function* () {
    yield { t: 'accepted', startedAt: NOW };
    throw new C0Error('EXEC_OUTPUT_TOO_LARGE', 'the provider sent more than 64 bytes of output');
  });
  assert.equal(nds[0]!.record.reason, 'no-receipt');
  assert.match(nds[0]!.record.detail ?? '', /EXEC_OUTPUT_TOO_LARGE/);
});

test('a frame this node\'s reader refuses (not CBOR, over the bound) is the provider\'s too: no-receipt', async () => {
  for (const code of ['NET_BAD_FRAME', 'NET_FRAME_TOO_LARGE']) {
    const nds = await answered(async function* () {
      yield { t: 'accepted', startedAt: NOW };
      throw new C0Error(code, 'the frame');
    });
    assert.equal(nds[0]!.record.reason, 'no-receipt', code);
  }
});

test('a receipt frame whose bytes do not open: bad-receipt', async () => {
  const nds = await answered(async function* () {
    yield { t: 'accepted', startedAt: NOW };
    yield { t: 'output', data: new Uint8Array([1]) };
    yield { t: 'receipt', receipt: new Uint8Array([1, 2, 3, 4]) };
  });
  assert.equal(nds[0]!.record.reason, 'bad-receipt');
  assert.match(nds[0]!.record.detail ?? '', /ENVELOPE_MALFORMED/);
});

test('the same code in the provider’s own error frame is its refusal, not a broken stream', async () => {
  const nds = await answered(async function* () {
    yield { t: 'accepted', startedAt: NOW };
    throw new C0Error('EXEC_BAD_FRAME', 'the buyer sent a bad frame', { detail: { remote: true } });
  });
  assert.equal(nds[0]!.record.reason, 'unreachable', 'as before: what a remote error frame means is not changed here');
});
