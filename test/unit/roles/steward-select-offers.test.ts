/**
 * A managed overlay's `select` takes the offers the buyer collected (src/roles/steward-handlers.ts `select`): the
 * buyer's collection ends at the first offer sent to it directly, and the steward's gossiped copy can be a hop behind,
 * so deciding from the steward's book alone could find none (`STEWARD_NO_CANDIDATE`: seen once in CI, on a loaded
 * machine). Offers for another job, or bytes that are no offer, are left out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Offer } from '../../../src/records/kinds.js';
import { admittedEvent } from '../../../src/pool/admission.js';
import { select } from '../../../src/roles/steward-handlers.js';
import type { StewardConfig, StewardPorts } from '../../../src/roles/steward-ports.js';
import type { Decision } from '../../../src/roles/buyer.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { P, advert, job, offer } from '../market/fixtures.js';
import { TREE, claimOf } from './preempt-fixtures.js';

const [buyer, provA] = [P(1), P(3)];
const j = job(buyer, { nonce: new Uint8Array([5]) });
const other = job(buyer, { nonce: new Uint8Array([6]) });
const offerA = offer(provA, j, advert(provA));

test('select decides with the offers the buyer carried when the steward’s book holds none yet; others are left out', async () => {
  const t = tempDir('c0-select-offers-');
  try {
    const r = await stewardRig(t.dir, TREE);
    const v = r.pool.decide(claimOf(j.address, 'lo'));
    assert.equal(v.verdict, 'Admit');
    if (v.verdict === 'Admit') await r.append(admittedEvent(claimOf(j.address, 'lo'), v));
    const book = new Map<string, Opened<Offer>>();
    const market = {
      decide: async () => ({ ranked: [...book.values()].map((o) => ({ provider: o.signer, offer: o, total: 1, scores: {} })) }) as unknown as Decision,
      signSelection: () => ({ bytes: new Uint8Array([1]) }),
      addOffer: async (o: Opened<Offer>) => void book.set(o.address, o),
      adverts: { latest: new Map() },
    };
    const ports = { ...r.ports, records: { get: async (a: string) => (a === j.address ? j : undefined) }, market } as unknown as StewardPorts;
    const ask = async (offers?: unknown[]) => {
      const sent: CborValue[] = [];
      await select({ ports, ledger: r.ledger, cfg: { managed: true } as StewardConfig, accounts: r.accounts, tree: r.pool.tree }, { op: 'select', job: j.address, ...(offers ? { offers } : {}) }, { peer: peerIdFromDid(buyer.did), send: async (f) => void sent.push(f) });
      return sent[0] as { offer?: Uint8Array } | undefined;
    };
    await assert.rejects(ask(), { code: 'STEWARD_NO_CANDIDATE' }, 'nothing in the book, nothing carried');
    await assert.rejects(ask([offer(provA, other, advert(provA)).bytes, new Uint8Array([0xff]), 'junk']), { code: 'STEWARD_NO_CANDIDATE' }, 'another job’s offer and junk are left out');
    assert.deepEqual(Buffer.from((await ask([offerA.bytes]))!.offer!), Buffer.from(offerA.bytes));
    assert.deepEqual([...book.keys()], [offerA.address]);
    await r.close();
  } finally {
    t.cleanup();
  }
});
