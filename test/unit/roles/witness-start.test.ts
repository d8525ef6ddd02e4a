/**
 * A head the witness missed is not lost (src/roles/witness.ts): at start it asks each steward it holds a head for,
 * and each one named in `stewards`, for its ledger past that head, and cosigns it, without waiting for a head on
 * pool-head (gossip does not replay, so one published while the witness was away is never heard); a steward not
 * reached yet is asked again. A head it already holds, heard again (the steward republishes it), costs no fetch and
 * no receipt. Real LevelDB and signatures; the network is a fake serving each steward's sealed entries over ledger/1.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ed25519Signer, didFromPublicKey, type Opened } from '../../../src/records/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { C0Error } from '../../../src/errors.js';
import { sealEntries, type LedgerEntry } from '../../../src/ledger/index.js';
import { Witness } from '../../../src/ledger/witness.js';
import type { WitnessConfig, WitnessPorts, WitnessRole } from '../../../src/roles/witness.js';
import { admitted } from '../ledger/helpers.js';
import { head, until, withWitness, type Chain, type Db } from './witness-rig.js';


function stewardChain(n: number): { did: string; chain: Chain } {
  const signer = Ed25519Signer.generate();
  return { did: didFromPublicKey(signer.publicKey), chain: sealEntries(Array.from({ length: n }, (_, i) => admitted(`c${i}`)), signer) };
}

interface Net {
  calls: Array<{ steward: string; from: number }>;
  receipts: number;
  onHead: (e: Opened<LedgerEntry>) => void;
  /** Requests to these stewards fail as an unreachable peer's do. */
  unreachable: Set<string>;
}

/** A witness key and database that outlive the role (`start` starts it again on them). */
async function rig(chains: Map<string, Chain>, fn: (r: { net: Net; me: Ed25519Signer; db: Db; start: (cfg: WitnessConfig) => Promise<WitnessRole> }) => Promise<void>): Promise<void> {
  const net: Net = { calls: [], receipts: 0, onHead: () => undefined, unreachable: new Set() };
  const ports: WitnessPorts = {
    name: 'labs',
    clock: fakeClock(1_000),
    log: silentLogger(),
    net: {
      subscribe: ((_kind: string, h: (rec: unknown) => void) => void (net.onHead = h as Net['onHead'])) as never,
      publish: (async (kind: string) => {
        if (kind === 'pool-witness') net.receipts++;
        return 1;
      }) as never,
      request: (async (steward: string, _p: string, frames: Array<{ from: number; to: number }>) => {
        const { from, to } = frames[0]!;
        net.calls.push({ steward, from });
        if (net.unreachable.has(steward)) throw new C0Error('NET_DIAL', 'cannot open /c0mpute/ledger/1: no route');
        return (chains.get(steward) ?? []).slice(from, to).map((e) => e.bytes);
      }) as never,
    },
  };
  await withWitness('c0-witness-start-', ports, ({ db, me, start }) => fn({ net, me, db, start }));
}

describe('a witness catches up at start', () => {
  it('cosigns what a steward it holds appended while it was away, with no head heard', async () => {
    const s = stewardChain(3);
    await rig(new Map([[s.did, s.chain]]), async ({ net, me, db, start }) => {
      // cosigned length 1 before the restart; the steward appended two more meanwhile (their heads reached nobody)
      await new Witness(db, me, { now: fakeClock() }).cosign(s.did, [s.chain[0]!.bytes]);
      const role = await start({ startCatchUpMs: [0] });
      await until(async () => (await role.witness.held(s.did)).length === 3, 'the witness to hold length 3');
      assert.equal(net.receipts, 1);
      assert.equal(net.calls[0]!.from, 0, 'from the entry at the held head, so a rewrite of it is seen');
    });
  });

  it('also asks each steward named in `stewards` it holds nothing for yet', async () => {
    const s = stewardChain(2);
    await rig(new Map([[s.did, s.chain]]), async ({ start }) => {
      const role = await start({ stewards: [s.did], startCatchUpMs: [0] });
      await until(async () => (await role.witness.held(s.did)).length === 2, 'the witness to hold length 2');
    });
  });

  it('a steward far behind (more than one cosign) is caught up in steps at that same start, not one step per restart', async () => {
    const s = stewardChain(35);
    await rig(new Map([[s.did, s.chain]]), async ({ net, start }) => {
      const role = await start({ stewards: [s.did], startCatchUpMs: [0], stepEntries: 10 } as never);
      await until(async () => (await role.witness.held(s.did)).length === 35, 'the witness to hold length 35');
      await role.settled();
      assert.equal(net.receipts, 4, 'lengths 10, 19, 28 and 35');
    });
  });

  it('asks a steward not reached yet again, and one that answered no more', async () => {
    const s = stewardChain(2);
    await rig(new Map([[s.did, s.chain]]), async ({ net, start }) => {
      net.unreachable.add(s.did);
      const role = await start({ stewards: [s.did], startCatchUpMs: [0, 50, 100, 150] });
      await until(() => net.calls.length >= 1, 'the first ask');
      net.unreachable.delete(s.did);
      await until(async () => (await role.witness.held(s.did)).length === 2, 'the witness to hold length 2 once reached');
      const asked = net.calls.length;
      // the later times pass: it is not asked again
      await new Promise((r) => setTimeout(r, 250));
      await role.settled();
      assert.equal(net.calls.length, asked);
    });
  });

  it('a steward whose head it holds costs one range call at start and nothing more than its kept receipt, given again', async () => {
    const s = stewardChain(2);
    await rig(new Map([[s.did, s.chain]]), async ({ net, me, db, start }) => {
      const kept = await new Witness(db, me, { now: fakeClock() }).cosign(s.did, s.chain.map((e) => e.bytes));
      const role = await start({ startCatchUpMs: [0] });
      await until(() => net.calls.length === 1, 'the start ask');
      await role.settled();
      // nothing cosigned again; the receipt written before the restart may never have left (a kill after the write)
      assert.equal(net.receipts, 1, 'the kept receipt, published once');
      assert.deepEqual(await role.witness.receipt(s.did), kept);
    });
  });
});

describe('a steward taken off witness.stewards', () => {
  it('is neither fetched nor countersigned at the next start, nor on a head heard after; what is stored of it stays', async () => {
    const old = stewardChain(4);
    const now = stewardChain(1);
    await rig(new Map([[old.did, old.chain], [now.did, now.chain]]), async ({ net, me, db, start }) => {
      // held at length 1 before the operator narrowed the list to the new steward (a rotated key, say); OLD went on appending
      await new Witness(db, me, { now: fakeClock() }).cosign(old.did, [old.chain[0]!.bytes]);
      const role = await start({ stewards: [now.did], startCatchUpMs: [0] });
      await until(async () => (await role.witness.held(now.did)).length === 1, 'the listed steward to be witnessed');
      net.onHead(head(old.chain[3]!));
      await role.settled();
      assert.deepEqual(net.calls.map((c) => c.steward), [now.did], 'only the listed steward was asked');
      assert.equal(net.receipts, 1, 'one receipt, for the listed steward');
      assert.equal((await role.witness.held(old.did)).length, 1, 'the unlisted steward’s stored head is kept as it was');
    });
  });
});

describe('a head heard again', () => {
  it('the head held, republished by the steward, is no work: no fetch, no receipt', async () => {
    const s = stewardChain(2);
    await rig(new Map([[s.did, s.chain]]), async ({ net, start }) => {
      const role = await start({ startCatchUpMs: [] });
      net.onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal((await role.witness.held(s.did)).length, 2);
      assert.deepEqual([net.calls.length, net.receipts], [1, 1]);
      net.onHead(head(s.chain[1]!));
      await role.settled();
      assert.deepEqual([net.calls.length, net.receipts], [1, 1]);
    });
  });
});
