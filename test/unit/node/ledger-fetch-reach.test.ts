/**
 * `ledger fetch` of this node's own ledger and of a steward this overlay cannot reach (src/node/ledger-fetch.ts):
 * a running steward's own ledger is read from its store with no dial (before: NET_DIAL_FAILED "Can not dial self");
 * this node asked on an overlay it does not steward is LEDGER_FETCH_SELF; a steward with no address found, or whose
 * dial fails, is LEDGER_STEWARD_UNREACHABLE naming the overlay searched (and --overlay with the node's other overlays, when it
 * is on more than one), before any range is asked
 * (before: a range's 60 s deadline, then NET_DEADLINE "stream passed its deadline").
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { didFromPublicKey } from '../../../src/records/index.js';
import { sealEntries } from '../../../src/ledger/index.js';
import { OverlayNode } from '../../../src/node/overlay.js';
import { fetchLedgerEntries } from '../../../src/node/ledger-fetch.js';
import type { Network } from '../../../src/net/node.js';
import { admitted, steward as stewardKey } from '../ledger/helpers.js';

const S = didFromPublicKey(stewardKey.publicKey);
const OTHER = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK';
// 1,200 entries: a full range and a short one
const chain = sealEntries(Array.from({ length: 1200 }, (_, i) => admitted(`c${i}`)), stewardKey).map((e) => e.bytes);
const own = { length: chain.length, entries: async (from: number, to: number) => chain.slice(from, to) };

type FakeNet = Pick<Network, 'request' | 'did' | 'overlay' | 'findPeer' | 'dial'> & { calls: string[] };
/** A network as the overlay's: dialling itself fails as libp2p's does; `findPeer`/`dial` as given; requests end as a range's deadline did. */
function network(o: { did: string; findPeer?: () => Promise<string[]>; dial?: () => Promise<never> }): FakeNet {
  const calls: string[] = [];
  return {
    calls,
    did: o.did,
    overlay: 'public',
    findPeer: (async (did: string) => (calls.push(`findPeer ${did}`), o.findPeer ? o.findPeer() : ['/ip4/10.0.0.1/tcp/4001'])) as never,
    dial: (async (did: string) => (calls.push(`dial ${did}`), o.dial ? o.dial() : undefined)) as never,
    request: (async (did: string) => {
      calls.push(`request ${did}`);
      if (did === o.did) throw new C0Error('NET_DIAL_FAILED', 'cannot open /c0mpute/ledger/1 to 12D3…: Can not dial self');
      throw new C0Error('NET_DEADLINE', 'stream passed its deadline of 60000 ms');
    }) as never,
  };
}

async function refusal(p: Promise<unknown>): Promise<C0Error> {
  try {
    await p;
  } catch (e) {
    if (e instanceof C0Error) return e;
    throw e;
  }
  assert.fail('the fetch succeeded');
}

describe('ledger fetch: this node’s own ledger, and a steward out of reach', () => {
  it('a running steward’s own ledger (OverlayNode.fetchLedger) is read from its store, whole and checked, with no request', async () => {
    const net = network({ did: S });
    const fake = { d: { network: {} }, net, did: S, steward: { ledger: own }, records: { witnessReceiptsFor: async () => [] } };
    const got = await OverlayNode.prototype.fetchLedger.call(fake as never, S);
    assert.equal(got.entries.length, chain.length);
    assert.deepEqual(got.entries, chain);
    assert.deepEqual(net.calls, []);
  });

  it('this node asked on an overlay it does not steward: LEDGER_FETCH_SELF naming the overlay and --overlay, nothing dialled', async () => {
    const net = network({ did: S });
    const fake = { d: { network: {} }, net, did: S, steward: undefined, records: { witnessReceiptsFor: async () => [] } };
    const e = await refusal(OverlayNode.prototype.fetchLedger.call(fake as never, S));
    assert.equal(e.code, 'LEDGER_FETCH_SELF');
    assert.match(e.message, /overlay public/);
    assert.match(e.message, /--overlay/);
    assert.deepEqual(net.calls, []);
  });

  it('no address for the steward on this overlay: LEDGER_STEWARD_UNREACHABLE at once, naming the overlay searched, and --overlay with the other overlays when the node is on more than one', async () => {
    const net = network({ did: S, findPeer: async () => Promise.reject(new C0Error('NET_PEER_NOT_FOUND', `no addresses found for ${OTHER}`)) });
    const e = await refusal(fetchLedgerEntries(net, OTHER, { otherOverlays: ['acme', 'lab'] }));
    assert.equal(e.code, 'LEDGER_STEWARD_UNREACHABLE');
    assert.equal(e.field, 'steward');
    assert.match(e.message, /on overlay public \(no address for it known or found/);
    assert.match(e.message, /another overlay this node is on \(acme, lab\), ask there with --overlay NAME/);
    assert.deepEqual(net.calls, [`findPeer ${OTHER}`], 'no range was asked');
    // a node on one overlay has nowhere else to ask: no hint that it does (QA witness pass, finding 10)
    for (const opts of [{}, { otherOverlays: [] }]) {
      const one = await refusal(fetchLedgerEntries(network({ did: S, findPeer: async () => Promise.reject(new C0Error('NET_PEER_NOT_FOUND', 'none')) }), OTHER, opts));
      assert.equal(one.code, 'LEDGER_STEWARD_UNREACHABLE');
      assert.doesNotMatch(one.message, /--overlay|another overlay/);
    }
  });

  it('an address known but the dial failing: LEDGER_STEWARD_UNREACHABLE saying so; a network without a reach check maps the first range’s dial failure the same way', async () => {
    const net = network({ did: S, dial: async () => Promise.reject(new C0Error('NET_DIAL_FAILED', 'cannot connect: connection refused')) });
    const e = await refusal(fetchLedgerEntries(net, OTHER));
    assert.equal(e.code, 'LEDGER_STEWARD_UNREACHABLE');
    assert.match(e.message, /the dial failed: cannot connect: connection refused/);
    assert.deepEqual(net.calls, [`findPeer ${OTHER}`, `dial ${OTHER}`]);
    const bare = { request: (async () => Promise.reject(new C0Error('NET_DIAL_FAILED', 'cannot open: no route'))) as never };
    assert.equal((await refusal(fetchLedgerEntries(bare, OTHER))).code, 'LEDGER_STEWARD_UNREACHABLE');
  });
});
