/**
 * A provider holds one large input per connection (docs/network.md "Direct streams"); a second from the same buyer
 * while the first is held is refused with NET_BUFFER_LIMIT. That refusal is the buyer's own doing: it signs no
 * non-delivery against the provider for it. The same refusal with none of our streams in flight is the provider's
 * (its total budget is full) and counts as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buyer, type BuyerDeps, type JobSpec, type RankedCandidate } from '../../../src/roles/buyer.js';
import { C0Error } from '../../../src/errors.js';
import { BUFFER_LIMIT } from '../../../src/net/byte-budget.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Selection } from '../../../src/records/kinds.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';

const ME = P(741);
const PROV = P(742);

test('NET_BUFFER_LIMIT for a second of our inputs signs no non-delivery; alone it still does', async () => {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let calls = 0;
  const deps = {
    signer: ME.signer,
    did: ME.did,
    clock: () => NOW,
    log,
    exec: async function* () {
      const n = calls++;
      if (n === 0) {
        // the first input is held by the provider while its job runs
        await held;
        throw new C0Error('NET_STREAM_FAILED', 'gone');
      }
      throw new C0Error(BUFFER_LIMIT, "exec peer answered: this connection's streams may hold 25165824 bytes", { detail: { remote: true } });
      yield new Uint8Array(); // unreachable: makes this a generator
    },
  } as unknown as BuyerDeps;
  const buyer = new Buyer(deps);
  const a = advert(PROV);
  const mk = (i: number) => {
    const j = job(ME, { announcedAt: NOW + i });
    const cand = { provider: PROV.did, offer: offer(PROV, j, a) } as unknown as RankedCandidate;
    return { j, cand };
  };
  const sel = { bytes: new Uint8Array(1) } as unknown as Opened<Selection>;
  const spec = { input: new Uint8Array(4) } as unknown as JobSpec;
  const first = mk(1);
  const second = mk(2);
  const p1 = buyer.attempt(first.j, first.cand, sel, spec, noop);
  const r2 = await buyer.attempt(second.j, second.cand, sel, spec, noop);
  assert.equal(r2.nondelivery, undefined, 'refused for our own other input: no non-delivery');
  assert.match(r2.outcome, /busy with another of our inputs/);
  release();
  const r1 = await p1;
  assert.equal(r1.nondelivery, 'unreachable');
  // nothing of ours in flight now: the provider's own limit, a non-delivery as before
  const third = mk(3);
  const r3 = await buyer.attempt(third.j, third.cand, sel, spec, noop);
  assert.equal(r3.nondelivery, 'unreachable');
});
