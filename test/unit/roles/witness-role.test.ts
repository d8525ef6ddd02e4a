/**
 * The witness role (src/roles/witness.ts) against stewards that push it: a head
 * far past the one held is refused before anything is fetched, a witness with no
 * list takes on at most `maxStewards` stewards, heads heard during a catch-up
 * wait as one (the newest), and a steward that keeps equivocating gets a bounded
 * number of evidence pairs kept. Real LevelDB, real signatures; the network is a
 * fake that serves each steward's sealed entries over the ledger/1 call.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ed25519Signer, didFromPublicKey, open, type Opened } from '../../../src/records/index.js';
import { openDb, closeDb, sub, type Db } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { pino } from 'pino';
import { POOL_TYPE, WITNESS_TYPE, sealEntries, type LedgerEntry, type WitnessReceipt } from '../../../src/ledger/index.js';
import { MAX_EVIDENCE_PER_STEWARD, Witness, WITNESS_ERR } from '../../../src/ledger/witness.js';
import { MAX_SHOWN_STRANGERS, REFUSED_HEAD_MS, WitnessRole, type WitnessConfig, type WitnessPorts } from '../../../src/roles/witness.js';
import type { Logger } from '../../../src/util/log.js';
import { admitted, tempDir } from '../ledger/helpers.js';

type Chain = Array<{ bytes: Uint8Array; address: string }>;

const head = (e: { bytes: Uint8Array }): Opened<LedgerEntry> => open(e.bytes, POOL_TYPE) as Opened<LedgerEntry>;
const flush = () => new Promise((r) => setTimeout(r, 20));

/** A witness role over a fake network serving `chains` (steward DID → its entries); `gate` holds every ledger call until it resolves. */
interface Rig {
  role: WitnessRole;
  onHead: (e: Opened<LedgerEntry>) => void;
  calls: Array<{ steward: string; from: number; to: number }>;
  warnings: string[];
  /** The topics published on, in order. */
  published: string[];
  db: Db;
  open: () => void;
  /** The role started again on the same database (a restarted node). */
  restart: () => Promise<WitnessRole>;
  clock: ReturnType<typeof fakeClock>;
}

async function rig(chains: Map<string, Chain>, fn: (r: Rig) => Promise<void>, cfg: WitnessConfig = {}, gated = false): Promise<void> {
  const t = tempDir('c0-witness-role-');
  const db: Db = await openDb(t.dir);
  const calls: Array<{ steward: string; from: number; to: number }> = [];
  const warnings: string[] = [];
  const published: string[] = [];
  let release: () => void = () => undefined;
  const gate = gated ? new Promise<void>((r) => (release = r)) : Promise.resolve();
  let onHead: (e: Opened<LedgerEntry>) => void = () => undefined;
  const log = pino({ level: 'warn' }, { write: (s: string) => void warnings.push((JSON.parse(s) as { msg: string }).msg) }) as unknown as Logger;
  const clock = fakeClock(1_000);
  const ports: WitnessPorts = {
    name: 'labs',
    clock,
    monoClock: clock,
    log,
    net: {
      subscribe: ((_kind: string, h: (rec: unknown) => void) => void (onHead = h as typeof onHead)) as never,
      publish: (async (kind: string) => (published.push(kind), 1)) as never,
      request: (async (steward: string, _p: string, frames: Array<{ from: number; to: number }>) => {
        const { from, to } = frames[0]!;
        calls.push({ steward, from, to });
        await gate;
        return (chains.get(steward) ?? []).slice(from, to).map((e) => e.bytes);
      }) as never,
    },
  };
  const me = Ed25519Signer.generate();
  const start = () => WitnessRole.start(ports, db, { signer: me, did: didFromPublicKey(me.publicKey) } as never, cfg);
  let role = await start();
  try {
    const restart = async () => {
      await role.stop();
      return (role = await start());
    };
    await fn({ role, onHead: (e) => onHead(e), calls, warnings, published, db, open: () => release(), restart, clock });
    await role.stop();
  } finally {
    await closeDb(db);
    t.cleanup();
  }
}

function stewardChain(n: number): { did: string; chain: Chain; signer: Ed25519Signer } {
  const signer = Ed25519Signer.generate();
  return { did: didFromPublicKey(signer.publicKey), chain: sealEntries(Array.from({ length: n }, (_, i) => admitted(`c${i}`)), signer), signer };
}

describe('witness role bounds', () => {
  it('cosigns an honest steward\'s head; a head far past the one held is fetched one step at a time, and only what is served', async () => {
    const s = stewardChain(3);
    await rig(new Map([[s.did, s.chain]]), async ({ role, onHead, calls }) => {
      onHead(head(s.chain[2]!));
      await role.settled();
      assert.deepEqual((await role.witness.held(s.did)).length, 3);
      const before = calls.length;
      // a head the steward signed at seq 10^9 that it does not serve: one range of the first step, no more
      const far = sealEntries([admitted('x')], s.signer, { start: { length: 1_000_000_000, head: s.chain[2]!.address } })[0]!;
      onHead(head(far));
      await role.settled();
      assert.deepEqual(calls.slice(before), [{ steward: s.did, from: 2, to: 2 + 1024 }]);
      assert.deepEqual(await role.witness.held(s.did), { length: 3, head: s.chain[2]!.address });
    });
  });

  it('without a list, takes on at most maxStewards stewards (kept across a restart of the role) and says so once', async () => {
    const ss = Array.from({ length: 5 }, () => stewardChain(2));
    await rig(new Map(ss.map((s) => [s.did, s.chain])), async ({ role, onHead, calls, warnings, restart }) => {
      // one after another (MAX_STRANGER_CATCHUPS new keys are fetched at once; a further one's head then is dropped)
      for (const s of ss) {
        onHead(head(s.chain[0]!));
        await role.settled();
      }
      onHead(head(ss[4]!.chain[0]!));
      await role.settled();
      assert.deepEqual(new Set(calls.map((c) => c.steward)), new Set(ss.slice(0, 3).map((s) => s.did)));
      assert.equal(warnings.filter((w) => w.startsWith('witnessing as many stewards')).length, 1);
      // a steward taken on still is (a newer head: the one held costs no fetch)
      onHead(head(ss[0]!.chain[1]!));
      await role.settled();
      assert.equal(calls.filter((c) => c.steward === ss[0]!.did).length, 2);
      // restarted, it knows the three it holds heads for: the others are still refused, those still served
      const again = await restart();
      onHead(head(ss[3]!.chain[0]!));
      onHead(head(ss[1]!.chain[1]!));
      await again.settled();
      assert.equal(calls.filter((c) => c.steward === ss[3]!.did).length, 0);
      assert.equal(calls.filter((c) => c.steward === ss[1]!.did).length, 2);
    }, { maxStewards: 3 });
  });

  it('a steward that serves nothing is not kept taken on, so such heads cannot fill maxStewards; a stopped role takes no heads', async () => {
    const empty = stewardChain(2);
    const real = stewardChain(1);
    // `empty` signs heads but its ledger/1 answers nothing
    await rig(new Map([[real.did, real.chain]]), async ({ role, onHead, calls }) => {
      onHead(head(empty.chain[1]!));
      await role.settled();
      assert.equal(calls.length, 1);
      assert.equal((await role.witness.held(empty.did)).length, 0);
      onHead(head(real.chain[0]!));
      await role.settled();
      assert.equal((await role.witness.held(real.did)).length, 1, 'the real steward is taken: the empty one was forgotten');
      await role.stop();
      const before = calls.length;
      onHead(head(real.chain[0]!));
      await new Promise((r) => setTimeout(r, 20));
      assert.equal(calls.length, before, 'stopped: nothing fetched');
    }, { maxStewards: 1 });
  });

  it('status() of one overlay leaves out the stewards held that another overlay of the node names (the store is the node’s); one no overlay names is still shown (QA qaWit F3)', async () => {
    const [a, b, c] = [stewardChain(2), stewardChain(3), stewardChain(1)];
    await rig(new Map([[a.did, a.chain]]), async ({ role, onHead }) => {
      onHead(head(a.chain[1]!));
      await role.settled();
      // cosigned by this node's witness on other overlays (b is another overlay's steward; c, one no overlay names now)
      await role.witness.cosign(b.did, b.chain.map((e) => e.bytes));
      await role.witness.cosign(c.did, c.chain.map((e) => e.bytes));
      const shown = (await role.status()) as { stewards: Record<string, unknown> };
      assert.deepEqual(Object.keys(shown.stewards).sort(), [a.did, c.did].sort());
    }, { stewards: [a.did], elsewhere: [b.did] });
  });

  it('a listed steward whose head is refused keeps its refusal in the status', async () => {
    const s = stewardChain(1);
    // it serves seq 0 then seq 2: a gap, refused
    const gap = sealEntries([admitted('x')], s.signer, { start: { length: 2, head: s.chain[0]!.address } })[0]!;
    await rig(new Map([[s.did, [s.chain[0]!, gap]]]), async ({ role, onHead }) => {
      onHead(head(gap));
      await role.settled();
      const st = (await role.status()) as { stewards: Record<string, { last: { refused?: string; head?: string } }> };
      assert.deepEqual(st.stewards[s.did]?.last, { refused: WITNESS_ERR.BROKEN_LINK, at: 1_000, head: gap.address });
    }, { stewards: [s.did] });
  });

  it('heads heard during a catch-up wait as one: the newest', async () => {
    const s = stewardChain(40);
    await rig(
      new Map([[s.did, s.chain]]),
      async ({ role, onHead, calls, open: release }) => {
        onHead(head(s.chain[0]!));
        await flush();
        for (let i = 1; i < 40; i++) onHead(head(s.chain[i]!));
        release();
        await role.settled();
        assert.equal(calls.length, 2, 'the first catch-up and one for the newest head, not 40');
        assert.equal((await role.witness.held(s.did)).length, 40);
      },
      {},
      true,
    );
  });
});

describe('witness role: refused heads', () => {
  type Status = { stewards: Record<string, { last: { refused?: string; head?: string; length?: number } }> };

  it('a key never cosigned whose run is refused keeps its refusal in the status, and is not fetched again for a while, whatever head it announces', async () => {
    const k = stewardChain(2);
    // seq 2 does not link to seq 1: signed once, it would make every witness fetch and verify the run each time it is announced
    const broken = sealEntries([admitted('x')], k.signer, { start: { length: 2, head: `sha256:${'11'.repeat(32)}` } })[0]!;
    const other = sealEntries([admitted('y')], k.signer, { start: { length: 3, head: broken.address } })[0]!;
    const chains = new Map([[k.did, [...k.chain, broken, other]]]);
    await rig(chains, async ({ role, onHead, calls, clock }) => {
      onHead(head(broken));
      await role.settled();
      assert.equal(calls.length, 1);
      const st = (await role.status()) as Status;
      assert.equal(st.stewards[k.did]?.last.refused, WITNESS_ERR.BROKEN_LINK, 'the refusal is shown in GET /v1/witness');
      assert.equal(st.stewards[k.did]?.last.head, broken.address, 'with the head refused');
      onHead(head(broken)); // republished
      onHead(head(other)); // or another head of the same key
      await role.settled();
      assert.equal(calls.length, 1, 'neither is fetched again');
      assert.deepEqual(await role.witness.stewards(), [], 'nothing taken on');
      clock.advance(REFUSED_HEAD_MS + 1);
      onHead(head(broken));
      await role.settled();
      assert.equal(calls.length, 2, 'after the while, it is asked again');
    });
  });

  it(`shows the refusals of at most ${MAX_SHOWN_STRANGERS} keys never cosigned, the most recent`, async () => {
    // each serves only its entry at seq 1 when asked from 0: refused (WITNESS_CONFLICT), nothing taken on
    const keys = Array.from({ length: MAX_SHOWN_STRANGERS + 3 }, () => {
      const signer = Ed25519Signer.generate();
      return { did: didFromPublicKey(signer.publicKey), e1: sealEntries([admitted('x')], signer, { start: { length: 1, head: `sha256:${'11'.repeat(32)}` } })[0]! };
    });
    await rig(new Map(keys.map((k) => [k.did, [k.e1, k.e1]])), async ({ role, onHead, clock }) => {
      for (const k of keys) {
        clock.advance(1_000); // such keys' catch-ups start 100 a minute, spread (STRANGER_DIALS)
        onHead(head(k.e1));
        await role.settled();
      }
      const shown = Object.keys(((await role.status()) as Status).stewards);
      assert.deepEqual(shown, keys.slice(3).map((k) => k.did));
      assert.deepEqual(await role.witness.stewards(), []);
    }, { maxStewards: 2 });
  });

  it('a steward held: the head refused is not fetched again, a newer one is', async () => {
    const s = stewardChain(5);
    const chains = new Map([[s.did, s.chain.slice(0, 2)]]);
    await rig(chains, async ({ role, onHead, calls }) => {
      onHead(head(s.chain[1]!));
      await role.settled();
      assert.equal((await role.witness.held(s.did)).length, 2);
      // it serves seq 1 then seq 3: a gap in the run, refused
      chains.set(s.did, [s.chain[0]!, s.chain[1]!, s.chain[3]!]);
      onHead(head(s.chain[3]!));
      await role.settled();
      const n = calls.length;
      assert.equal(((await role.status()) as Status).stewards[s.did]?.last.refused, WITNESS_ERR.BROKEN_LINK);
      onHead(head(s.chain[3]!));
      await role.settled();
      assert.equal(calls.length, n, 'the same head is not fetched again');
      chains.set(s.did, s.chain);
      onHead(head(s.chain[4]!));
      await role.settled();
      assert.deepEqual(await role.witness.held(s.did), { length: 5, head: s.chain[4]!.address });
    });
  });
});

describe('witness role: a ledger longer than one cosign', () => {
  it('a head more than one step past the held one is fetched and cosigned in steps, each its own receipt', async () => {
    const s = stewardChain(35);
    await rig(new Map([[s.did, s.chain]]), async ({ role, onHead, calls, published }) => {
      onHead(head(s.chain[34]!));
      await role.settled();
      assert.deepEqual(await role.witness.held(s.did), { length: 35, head: s.chain[34]!.address });
      assert.ok(calls.every((c) => c.to - c.from <= 10), `each step fetches at most 10 entries: ${JSON.stringify(calls)}`);
      assert.deepEqual(published, ['pool-witness', 'pool-witness', 'pool-witness', 'pool-witness'], 'lengths 10, 19, 28 and 35');
      const st = (await role.status()) as { stewards: Record<string, { last: { length?: number } }> };
      assert.equal(st.stewards[s.did]?.last.length, 35);
    }, { stepEntries: 10 } as never);
  });
});

describe('witness evidence bound', () => {
  it(`keeps at most ${MAX_EVIDENCE_PER_STEWARD} equivocation pairs per steward; each is still returned`, async () => {
    const t = tempDir('c0-witness-ev-');
    const db = await openDb(t.dir);
    try {
      const signer = Ed25519Signer.generate();
      const did = didFromPublicKey(signer.publicKey);
      const w = new Witness(db, Ed25519Signer.generate(), { now: fakeClock(), stewards: [did] });
      const first = sealEntries([admitted('a')], signer)[0]!;
      for (let i = 0; i < MAX_EVIDENCE_PER_STEWARD + 5; i++) {
        const other = sealEntries([admitted(`b${i}`)], signer)[0]!;
        const ev = await w.keep(did, first.bytes, other.bytes);
        assert.equal(ev?.seq, 0);
      }
      assert.equal((await w.evidence(did)).length, MAX_EVIDENCE_PER_STEWARD);
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });
});

describe('witness evidence about keys it never took on', () => {
  /** A throwaway "steward": two entries that do not link (seq 0, and seq 1 naming another prev), and a third at seq 1. */
  function throwaway(): { did: string; e0: Chain[number]; e1: Chain[number]; e1other: Chain[number] } {
    const signer = Ed25519Signer.generate();
    const e0 = sealEntries([admitted('x')], signer)[0]!;
    const elsewhere = { length: 1, head: `sha256:${'11'.repeat(32)}` };
    const [e1, e1other] = [sealEntries([admitted('y')], signer, { start: elsewhere })[0]!, sealEntries([admitted('z')], signer, { start: elsewhere })[0]!];
    return { did: didFromPublicKey(signer.publicKey), e0, e1, e1other };
  }
  const kept = async (db: Db) => {
    let n = 0;
    for await (const _ of sub(db, 'witness-evidence').keys()) n++;
    return n;
  };

  it('keys neither held nor listed leave no evidence on disk and none published, however many; a held steward\'s is kept', async () => {
    const keys = Array.from({ length: 30 }, throwaway);
    const honest = stewardChain(2);
    const chains = new Map<string, Chain>(keys.map((k, i) => [k.did, i % 2 ? [k.e0, k.e1] : [k.e0, k.e1other]]));
    chains.set(honest.did, honest.chain.slice(0, 1));
    await rig(chains, async ({ role, onHead, calls, published, db, clock }) => {
      onHead(head(honest.chain[0]!));
      await role.settled();
      assert.equal((await role.witness.held(honest.did)).length, 1);
      // half announce the entry at seq 1 they serve (a fork inside the run), half announce another one than they serve
      for (const k of keys) {
        clock.advance(1_000); // such keys' catch-ups start 100 a minute, spread (STRANGER_DIALS)
        onHead(head(k.e1));
        await role.settled();
      }
      assert.equal(calls.filter((c) => c.steward !== honest.did).length, keys.length, 'each was fetched');
      assert.equal(await kept(db), 0, 'no evidence kept about keys never cosigned nor listed');
      assert.deepEqual(published, ['pool-witness'], 'nothing published about them');
      assert.deepEqual(await role.witness.stewards(), [honest.did]);
      // the steward it cosigned forks its head: kept and published as before
      const fork = sealEntries([admitted('f')], honest.signer, { start: { length: 1, head: `sha256:${'22'.repeat(32)}` } })[0]!;
      chains.set(honest.did, [honest.chain[0]!, fork]);
      onHead(head(fork));
      await role.settled();
      assert.equal((await role.witness.evidence(honest.did)).length, 1);
      assert.equal(await kept(db), 1);
      assert.deepEqual(published, ['pool-witness', 'pool-evidence']);
    }, { maxStewards: 2 });
  });

  it('a listed steward\'s evidence is kept and published before any head of it is cosigned', async () => {
    const k = throwaway();
    const l = throwaway();
    await rig(new Map([[k.did, [k.e0, k.e1]], [l.did, [l.e0, l.e1other]]]), async ({ role, onHead, published }) => {
      onHead(head(k.e1)); // the fork is inside the served run
      onHead(head(l.e1)); // it announced one entry at seq 1 and serves another
      await role.settled();
      assert.equal((await role.witness.evidence(k.did)).length, 1);
      assert.equal((await role.witness.evidence(l.did)).length, 1);
      assert.deepEqual(published, ['pool-evidence', 'pool-evidence']);
    }, { stewards: [k.did, l.did] });
  });
});

describe('witness on two overlays of one node', () => {
  it('two roles over one database cosign one of two forks announced at once on each overlay; the other is refused and kept as evidence', async () => {
    const t = tempDir('c0-witness-two-');
    const db = await openDb(t.dir);
    try {
      const s = stewardChain(3);
      // the steward serves one fork on each overlay: both extend the cosigned length 3, each with other entries
      const start = { length: 3, head: s.chain[2]!.address };
      const forkX = [...s.chain, ...sealEntries([admitted('x3'), admitted('x4')], s.signer, { start })];
      const forkY = [...s.chain, ...sealEntries([admitted('y3'), admitted('y4')], s.signer, { start })];
      const me = Ed25519Signer.generate();
      const identity = { signer: me, did: didFromPublicKey(me.publicKey) } as never;
      const receipts: Uint8Array[] = [];
      const evidence: Uint8Array[] = [];
      let release: () => void = () => undefined;
      let gate = Promise.resolve();
      let fetching = 0;
      const overlay = (name: string, chain: Chain): { ports: WitnessPorts; onHead: (e: Opened<LedgerEntry>) => void } => {
        const o = { onHead: (_e: Opened<LedgerEntry>) => undefined as void, ports: undefined as unknown as WitnessPorts };
        o.ports = {
          name,
          clock: fakeClock(1_000),
          log: pino({ level: 'silent' }) as unknown as Logger,
          net: {
            subscribe: ((_kind: string, h: (rec: unknown) => void) => void (o.onHead = h as typeof o.onHead)) as never,
            publish: (async (kind: string, bytes: Uint8Array) => void (kind === 'pool-witness' ? receipts : evidence).push(bytes)) as never,
            request: (async (_steward: string, _p: string, frames: Array<{ from: number; to: number }>) => {
              const { from, to } = frames[0]!;
              fetching++;
              await gate;
              return chain.slice(from, to).map((e) => e.bytes);
            }) as never,
          },
        };
        return o;
      };
      const acme = overlay('acme', forkX);
      const pub = overlay('public', forkY);
      const onAcme = await WitnessRole.start(acme.ports, db, identity, {});
      const onPublic = await WitnessRole.start(pub.ports, db, identity, {});
      // length 3 cosigned (on acme) first
      acme.onHead(head(s.chain[2]!));
      await onAcme.settled();
      assert.equal(receipts.length, 1);
      // both catch-ups fetch, held at the gate, then go on together
      gate = new Promise<void>((r) => (release = r));
      fetching = 0;
      acme.onHead(head(forkX[4]!));
      pub.onHead(head(forkY[4]!));
      while (fetching < 2) await flush();
      release();
      await Promise.all([onAcme.settled(), onPublic.settled()]);
      assert.equal(receipts.length, 2, 'one more receipt, not one per fork');
      const second = open(receipts[1]!, WITNESS_TYPE).record as WitnessReceipt;
      const cosigned = [forkX, forkY].find((f) => f[4]!.address === second.head)!;
      assert.ok(cosigned, 'the receipt covers one of the forks');
      assert.deepEqual(await onPublic.witness.held(s.did), { length: 5, head: cosigned[4]!.address });
      assert.equal((await onAcme.witness.evidence(s.did)).length, 1, 'the fork is kept, seen from either overlay');
      assert.equal((await onPublic.witness.evidence(s.did)).length, 1);
      assert.equal(evidence.length, 1, 'and published');
      await onAcme.stop();
      await onPublic.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });
});
