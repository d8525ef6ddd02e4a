/**
 * A steward whose ledger went back (its data directory restored from an old copy) while the witness holds a longer
 * head (src/roles/witness.ts #shorterHead, #rolledBackTo): a shorter head heard, or a start catch-up the steward
 * answers with LEDGER_RANGE_INVALID or nothing, is refused WITNESS_LEDGER_ROLLED_BACK, shown by status()
 * (`rolledBack`, `last`), and the held receipt is published again so the steward sees WITNESS_LENGTH_BEYOND. An old
 * head heard late while the steward still serves the held head is no alarm. Real LevelDB and signatures; the network
 * is a fake serving each steward's current chain over ledger/1 as the steward's handler does (a range from past its
 * length is refused LEDGER_RANGE_INVALID).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ed25519Signer, didFromPublicKey, open, type Opened } from '../../../src/records/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { C0Error } from '../../../src/errors.js';
import { WITNESS_TYPE, sealEntries, type LedgerEntry, type WitnessReceipt } from '../../../src/ledger/index.js';
import { WITNESS_LEDGER_ROLLED_BACK, ROLLBACK_PROBE_MS, CONNECT_CHECK_MS, type WitnessConfig, type WitnessPorts, type WitnessRole } from '../../../src/roles/witness.js';
import { Buffer } from 'node:buffer';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { admitted } from '../ledger/helpers.js';
import { head, until, withWitness, type Chain } from './witness-rig.js';


/** A steward key, its chain of `n` entries, and `rolledBack(keep, add)`: the first `keep` entries, then `add` new ones. */
function steward(n: number): { did: string; chain: Chain; rolledBack: (keep: number, add: number) => Chain } {
  const signer = Ed25519Signer.generate();
  const chain = sealEntries(Array.from({ length: n }, (_, i) => admitted(`c${i}`)), signer);
  const rolledBack = (keep: number, add: number): Chain => [
    ...chain.slice(0, keep),
    ...sealEntries(Array.from({ length: add }, (_, i) => admitted(`r${i}`)), signer, { start: { length: keep, head: chain[keep - 1]!.address } }),
  ];
  return { did: didFromPublicKey(signer.publicKey), chain, rolledBack };
}

interface Net {
  calls: Array<{ from: number; to: number }>;
  receipts: number;
  /** The pool-witness records published. */
  published: Uint8Array[];
  evidence: number;
  /** Publications reach nobody while this is false (a steward just restarted is in no mesh yet). */
  reach: boolean;
  onHead: (e: Opened<LedgerEntry>) => void;
  /**
   * A head published on pool-head, as gossip delivers it: once. A message seen before (the same bytes: the same message
   * id) is dropped, as gossipsub's seen cache and the validation pipeline's seen list drop it on a real node.
   */
  gossip: (e: { bytes: Uint8Array }) => boolean;
  /** libp2p's `peer:connect` for `did` connecting to the witness's node. */
  connect: (did: string) => void;
  /** While true, a request is not answered (the steward's process is down: NET_DIAL_FAILED). */
  down: boolean;
}

async function rig(chains: Map<string, Chain>, fn: (r: { net: Net; mono: { now: number }; wall: ReturnType<typeof fakeClock>; start: (cfg: WitnessConfig) => Promise<WitnessRole> }) => Promise<void>): Promise<void> {
  const seen = new Set<string>();
  const p2p = new EventTarget();
  const net: Net = {
    calls: [],
    receipts: 0,
    published: [],
    evidence: 0,
    reach: true,
    onHead: () => undefined,
    gossip: (e) => {
      const id = Buffer.from(e.bytes).toString('hex');
      if (seen.has(id)) return false;
      seen.add(id);
      net.onHead(head(e));
      return true;
    },
    connect: (did) => void p2p.dispatchEvent(new CustomEvent('peer:connect', { detail: peerIdFromDid(did) })),
    down: false,
  };
  const mono = { now: 1_000_000 };
  const wall = fakeClock(1_000);
  const ports: WitnessPorts = {
    name: 'labs',
    clock: wall,
    monoClock: () => mono.now,
    log: silentLogger(),
    net: {
      subscribe: ((_kind: string, h: (rec: unknown) => void) => void (net.onHead = h as Net['onHead'])) as never,
      publish: (async (kind: string, bytes: Uint8Array) => {
        if (kind === 'pool-witness') {
          net.receipts++;
          net.published.push(bytes);
        }
        if (kind === 'pool-evidence') net.evidence++;
        return { recipients: net.reach ? 1 : 0 };
      }) as never,
      request: (async (s: string, _p: string, frames: Array<{ from: number; to: number }>) => {
        const { from, to } = frames[0]!;
        net.calls.push({ from, to });
        if (net.down) throw new C0Error('NET_DIAL_FAILED', 'connection error: connect ECONNREFUSED');
        const chain = chains.get(s) ?? [];
        // as serveLedgerRange answers (src/roles/steward-handlers.ts), through the network's "peer answered"
        if (from > chain.length) throw new C0Error('LEDGER_RANGE_INVALID', `/c0mpute/ledger/1 peer answered: from ${from} is beyond the ledger's length ${chain.length}`);
        return chain.slice(from, to).map((e) => e.bytes);
      }) as never,
      libp2p: p2p as never,
    },
  };
  await withWitness('c0-witness-rollback-', ports, ({ start }) => fn({ net, mono, wall, start }));
}

type Shown = { held: { length: number }; last?: { refused?: string; length?: number }; rolledBack?: { held: number; heard?: number; served?: number } };
const shown = async (role: WitnessRole, s: string): Promise<Shown> => ((await role.status()).stewards as Record<string, Shown>)[s]!;

describe('a steward whose ledger went back (restored from an old copy)', () => {
  it('a shorter head it signed after the rollback is refused WITNESS_LEDGER_ROLLED_BACK, shown, and the held receipt given again', async () => {
    const s = steward(10);
    const chains = new Map([[s.did, s.chain]]);
    await rig(chains, async ({ net, wall, start }) => {
      const role = await start({ startCatchUpMs: [] });
      net.onHead(head(s.chain[9]!));
      await role.settled();
      assert.equal((await role.witness.held(s.did)).length, 10);
      assert.equal(net.receipts, 1);
      wall.advance(60_000);
      // restored to length 6, then appended to 8: its new head is shorter than the held one
      const restored = s.rolledBack(6, 2);
      chains.set(s.did, restored);
      net.onHead(head(restored[7]!));
      await role.settled();
      const st = await shown(role, s.did);
      assert.equal(st.last?.refused, WITNESS_LEDGER_ROLLED_BACK);
      assert.deepEqual(st.rolledBack && { held: st.rolledBack.held, heard: st.rolledBack.heard, served: st.rolledBack.served }, { held: 10, heard: 8, served: 8 });
      assert.equal(st.held.length, 10, 'the held head stays');
      assert.equal(net.receipts, 2, 'the held receipt published again: the steward sees a witness holding more than its ledger');
      // signed anew (the bytes first published are a duplicate gossip drops), for the same head
      const [a, b] = net.published.map((x) => open(x, WITNESS_TYPE) as Opened<WitnessReceipt>);
      assert.notDeepEqual(b!.bytes, a!.bytes);
      assert.deepEqual([b!.record.length, b!.record.head, b!.record.witnessedAt], [10, a!.record.head, 61_000]);
    });
  });

  it('the mark goes once the restored ledger grows past the held length: what is left is a fork (WITNESS_EQUIVOCATION), not a shorter ledger with a stale length', async () => {
    const s = steward(10);
    const chains = new Map([[s.did, s.chain]]);
    await rig(chains, async ({ net, start }) => {
      const role = await start({ startCatchUpMs: [] });
      net.onHead(head(s.chain[9]!));
      await role.settled();
      const restored = s.rolledBack(6, 2);
      chains.set(s.did, restored);
      net.onHead(head(restored[7]!));
      await role.settled();
      assert.equal((await shown(role, s.did)).rolledBack?.served, 8);
      // it appends on: 12 entries, past the 10 held, forking at seq 6
      const grown = s.rolledBack(6, 6);
      chains.set(s.did, grown);
      net.onHead(head(grown[11]!));
      await role.settled();
      const st = await shown(role, s.did);
      assert.equal(st.last?.refused, 'WITNESS_EQUIVOCATION');
      assert.equal(st.rolledBack, undefined, 'no "shorter than the length 10 held (it serves 8)" left behind');
      assert.equal(st.held.length, 10);
    });
  });

  it('a shorter head that is the very entry cosigned on the way (restored, nothing appended; the head relayed to it late) is found too', async () => {
    const s = steward(10);
    const chains = new Map([[s.did, s.chain]]);
    await rig(chains, async ({ net, start }) => {
      const role = await start({ startCatchUpMs: [] });
      net.onHead(head(s.chain[9]!));
      await role.settled();
      chains.set(s.did, s.chain.slice(0, 9)); // one short: nothing served at the held head's seq
      net.onHead(head(s.chain[8]!));
      await role.settled();
      assert.equal((await shown(role, s.did)).rolledBack?.served, 9);
    });
  });

  it('an old head heard late while the steward still serves the held head is no alarm, and a flood of them costs one read per ROLLBACK_PROBE_MS', async () => {
    const s = steward(10);
    await rig(new Map([[s.did, s.chain]]), async ({ net, mono, start }) => {
      const role = await start({ startCatchUpMs: [] });
      net.onHead(head(s.chain[9]!));
      await role.settled();
      const calls = net.calls.length;
      for (let i = 0; i < 9; i++) net.onHead(head(s.chain[i]!));
      await role.settled();
      const st = await shown(role, s.did);
      assert.equal(st.rolledBack, undefined);
      assert.equal(st.last?.length, 10, 'still: last cosigned length 10');
      assert.equal(net.receipts, 1, 'no receipt given again');
      assert.equal(net.calls.length, calls + 1, 'one read of the held head’s entry');
      mono.now += ROLLBACK_PROBE_MS;
      net.onHead(head(s.chain[3]!));
      await role.settled();
      assert.equal(net.calls.length, calls + 2);
    });
  });

  it('the start catch-up the steward refuses LEDGER_RANGE_INVALID (its ledger shorter than the held head) is refused WITNESS_LEDGER_ROLLED_BACK, not a failed fetch', async () => {
    const s = steward(10);
    const chains = new Map([[s.did, s.chain]]);
    await rig(chains, async ({ net, start }) => {
      const first = await start({ startCatchUpMs: [] });
      net.onHead(head(s.chain[9]!));
      await first.settled();
      await first.stop();
      chains.set(s.did, s.rolledBack(5, 2)); // length 7: from 9 is past it
      const role = await start({ startCatchUpMs: [0, 50, 100] });
      await until(async () => (await shown(role, s.did)).rolledBack !== undefined, 'the rollback to be shown');
      const st = await shown(role, s.did);
      assert.equal(st.last?.refused, WITNESS_LEDGER_ROLLED_BACK);
      assert.deepEqual([st.rolledBack!.held, st.rolledBack!.served], [10, 7]);
      await until(() => net.receipts === 2, 'the held receipt given again');
      await new Promise((r) => setTimeout(r, 150));
      assert.equal(net.calls.filter((c) => c.from === 9).length, 1, 'the steward answered: not asked again at each start time');
    });
  });

  it('the held receipt that reached nobody is given again until one reaches a peer', async () => {
    const s = steward(10);
    const chains = new Map([[s.did, s.chain]]);
    await rig(chains, async ({ net, start }) => {
      const role = await start({ startCatchUpMs: [], rollbackResendMs: 20 });
      net.onHead(head(s.chain[9]!));
      await role.settled();
      const restored = s.rolledBack(6, 2);
      chains.set(s.did, restored);
      net.reach = false;
      net.onHead(head(restored[7]!));
      await role.settled();
      assert.equal(net.receipts, 2);
      await until(() => net.receipts >= 4, 'the held receipt given again twice');
      net.reach = true;
      const n = net.receipts;
      await until(() => net.receipts === n + 1, 'one more that reaches a peer');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(net.receipts, n + 1, 'none once one reached a peer');
    });
  });

  it('a longer head heard late, from a steward whose ledger now stops one entry short of the held head (served nothing, no refusal), is refused WITNESS_LEDGER_ROLLED_BACK', async () => {
    const s = steward(14);
    const chains = new Map([[s.did, s.chain.slice(0, 10)]]);
    await rig(chains, async ({ net, start }) => {
      const role = await start({ startCatchUpMs: [], heldCheckMs: 0 });
      net.onHead(head(s.chain[9]!));
      await role.settled();
      assert.equal((await role.witness.held(s.did)).length, 10);
      // it went on to 14 (heads this witness did not hear), then was restored to 9; its length-14 head arrives late
      chains.set(s.did, s.chain.slice(0, 9));
      net.onHead(head(s.chain[13]!));
      await role.settled();
      const st = await shown(role, s.did);
      assert.equal(st.last?.refused, WITNESS_LEDGER_ROLLED_BACK);
      assert.deepEqual(st.rolledBack && { held: st.rolledBack.held, heard: st.rolledBack.heard, served: st.rolledBack.served }, { held: 10, heard: 14, served: 9 });
      assert.equal(st.held.length, 10);
      assert.equal(net.receipts, 2, 'the held receipt given again');
    });
  });

  describe('restored, nothing appended: its heads are duplicates gossip drops, so none is heard', () => {
    /** A witness that heard each of the steward's 10 heads once, then the steward restored to its first 9 entries. */
    async function restoredQuiet(cfg: WitnessConfig, fn: (r: { s: ReturnType<typeof steward>; chains: Map<string, Chain>; net: Net; mono: { now: number }; role: WitnessRole }) => Promise<void>): Promise<void> {
      const s = steward(10);
      const chains = new Map([[s.did, s.chain]]);
      await rig(chains, async ({ net, mono, start }) => {
        const role = await start({ startCatchUpMs: [], ...cfg });
        for (const e of s.chain) {
          assert.equal(net.gossip(e), true);
          await role.settled();
        }
        assert.equal((await role.witness.held(s.did)).length, 10);
        chains.set(s.did, s.chain.slice(0, 9));
        // the restarted steward republishes its head every resync period: the entry every node saw when it was appended
        for (let i = 0; i < 3; i++) assert.equal(net.gossip(s.chain[8]!), false, 'a duplicate: dropped');
        await role.settled();
        // with a periodic check (real timers, every few ms) it may already have found it: that is the check under test
        if (!cfg.heldCheckMs) assert.equal((await shown(role, s.did)).rolledBack, undefined, 'nothing heard');
        await fn({ s, chains, net, mono, role });
      });
    }

    it('found when the steward connects to the witness again, however recently it was checked before, one read per CONNECT_CHECK_MS however often it connects', async () => {
      await restoredQuiet({ heldCheckMs: 0 }, async ({ s, chains, net, mono, role }) => {
        // checked at a connection a moment before the restore (a restart), while it still served the held head
        chains.set(s.did, s.chain);
        net.connect(s.did);
        await role.settled();
        assert.equal((await shown(role, s.did)).rolledBack, undefined);
        chains.set(s.did, s.chain.slice(0, 9));
        mono.now += CONNECT_CHECK_MS;
        const calls = net.calls.length;
        const receipts = net.receipts;
        net.connect(s.did);
        await until(async () => (await shown(role, s.did)).rolledBack !== undefined, 'the rollback to be shown');
        await role.settled();
        const st = await shown(role, s.did);
        assert.equal(st.last?.refused, WITNESS_LEDGER_ROLLED_BACK);
        assert.deepEqual([st.rolledBack!.held, st.rolledBack!.served], [10, 9]);
        assert.deepEqual(net.calls.slice(calls), [{ from: 9, to: 10 }], 'one entry asked for: the held head’s');
        assert.equal(net.receipts, receipts + 1, 'the held receipt given again, signed anew');
        for (let i = 0; i < 5; i++) net.connect(s.did);
        await role.settled();
        assert.equal(net.calls.length, calls + 1, 'connecting again within CONNECT_CHECK_MS costs nothing');
        mono.now += CONNECT_CHECK_MS;
        net.connect(s.did);
        await role.settled();
        assert.equal(net.calls.length, calls + 2);
        net.connect('did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'); // a key not held: not asked
        await role.settled();
        assert.equal(net.calls.length, calls + 2);
      });
    });

    it('found when the steward connects seconds after a check that did not reach it (the periodic check ran while it was down; QA ffLedger F1)', async () => {
      await restoredQuiet({ heldCheckMs: 0 }, async ({ s, net, mono, role }) => {
        // the steward is down (being restored) when a check runs: it is not reached, and nothing is concluded
        mono.now += CONNECT_CHECK_MS;
        net.down = true;
        const calls = net.calls.length;
        net.connect(s.did);
        await role.settled();
        assert.equal(net.calls.length, calls + 1, 'asked, not reached');
        assert.equal((await shown(role, s.did)).rolledBack, undefined);
        // it comes back a few seconds later, restored, and connects: checked at once, not HELD_CHECK_MS later
        net.down = false;
        mono.now += 3_000;
        net.connect(s.did);
        await until(async () => (await shown(role, s.did)).rolledBack !== undefined, 'the rollback to be shown');
        assert.equal((await shown(role, s.did)).last?.refused, WITNESS_LEDGER_ROLLED_BACK);
        // reached now: connecting again within CONNECT_CHECK_MS costs nothing, as before
        const after = net.calls.length;
        net.connect(s.did);
        await role.settled();
        assert.equal(net.calls.length, after);
      });
    });

    it('found by the periodic check of each held steward, without any connection heard', async () => {
      await restoredQuiet({ heldCheckMs: 20 }, async ({ s, role }) => {
        await until(async () => (await shown(role, s.did)).rolledBack !== undefined, 'the rollback to be shown');
        assert.equal((await shown(role, s.did)).last?.refused, WITNESS_LEDGER_ROLLED_BACK);
      });
    });

    it('a steward that still serves the held head is checked without alarm', async () => {
      const s = steward(10);
      await rig(new Map([[s.did, s.chain]]), async ({ net, start }) => {
        const role = await start({ startCatchUpMs: [], heldCheckMs: 0 });
        net.gossip(s.chain[9]!);
        await role.settled();
        const receipts = net.receipts;
        net.connect(s.did);
        await role.settled();
        const st = await shown(role, s.did);
        assert.equal(st.rolledBack, undefined);
        assert.equal(st.last?.length, 10);
        assert.equal(net.receipts, receipts, 'no receipt given again');
      });
    });
  });
});
