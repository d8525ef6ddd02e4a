/**
 * A witness that cannot reach the steward it is named for says so (src/roles/witness.ts #startUnreached; QA witness
 * pass, finding 3). Before, a start catch-up's network failure was logged at debug and nothing was recorded: with the
 * wrong swarm key (no peers) or the wrong network.steward (a key that serves no ledger), `witness status` showed the
 * steward with no `last` for good and the log had no witness line at all. Now each failed round is shown as the last
 * refusal (the network's code, or WITNESS_NOT_A_STEWARD for a key that answers but serves no /c0mpute/ledger/1), one
 * warning follows once the last round has failed, an answer clears it, and heads the node dropped as signed by another
 * key than network.steward (HEAD_FOREIGN_STEWARD) are shown too. Real LevelDB and signatures; the network is a fake.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Ed25519Signer, didFromPublicKey } from '../../../src/records/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { C0Error } from '../../../src/errors.js';
import { sealEntries } from '../../../src/ledger/index.js';
import { WITNESS_NOT_A_STEWARD, type WitnessConfig, type WitnessPorts, type WitnessRole } from '../../../src/roles/witness.js';
import type { Logger } from '../../../src/util/log.js';
import { admitted } from '../ledger/helpers.js';
import { until, withWitness, type Chain } from './witness-rig.js';

function stewardChain(n: number): { did: string; chain: Chain } {
  const signer = Ed25519Signer.generate();
  return { did: didFromPublicKey(signer.publicKey), chain: sealEntries(Array.from({ length: n }, (_, i) => admitted(`c${i}`)), signer) };
}

interface Net {
  calls: number;
  /** How a request to a steward fails: not reached (no route), or reached and serving no ledger protocol. */
  fails: Map<string, 'unreached' | 'no-ledger'>;
  warns: Array<{ msg: string; steward?: string; code?: string }>;
  foreign?: { dropped: number; last: { signer: string; at: number } };
}

async function rig(chains: Map<string, Chain>, fn: (r: { net: Net; start: (cfg: WitnessConfig) => Promise<WitnessRole> }) => Promise<void>): Promise<void> {
  const net: Net = { calls: 0, fails: new Map(), warns: [] };
  const log = pino({ level: 'debug' }, {
    write: (line: string) => {
      const o = JSON.parse(line) as { level: number; msg: string; steward?: string; code?: string };
      if (o.level >= 40) net.warns.push({ msg: o.msg, ...(o.steward ? { steward: o.steward } : {}), ...(o.code ? { code: o.code } : {}) });
    },
  }) as unknown as Logger;
  const ports: WitnessPorts = {
    name: 'labs',
    clock: fakeClock(1_000),
    log,
    foreignHeads: () => net.foreign,
    net: {
      subscribe: (() => undefined) as never,
      publish: (async () => ({ recipients: 1 })) as never,
      request: (async (steward: string, protocol: string, frames: Array<{ from: number; to: number }>) => {
        net.calls++;
        const fail = net.fails.get(steward);
        // as protocols.ts DirectProtocols.call throws them: a dial that fails, or libp2p's protocol selection failing
        if (fail === 'unreached') throw new C0Error('NET_DIAL_FAILED', `cannot open ${protocol} to 12D3…: no valid addresses`, { detail: { name: 'NoValidAddressesError' } });
        if (fail === 'no-ledger') throw new C0Error('NET_PROTOCOL_UNSUPPORTED', `cannot open ${protocol} to 12D3…: the peer does not speak it (Protocol selection failed - could not negotiate ${protocol})`, { detail: { name: 'UnsupportedProtocolError' } });
        const { from, to } = frames[0]!;
        return (chains.get(steward) ?? []).slice(from, to).map((e) => e.bytes);
      }) as never,
    },
  };
  await withWitness('c0-witness-unreached-', ports, ({ start }) => fn({ net, start }));
}

type Last = { refused?: string; length?: number };
const lastOf = async (role: WitnessRole, s: string): Promise<Last | undefined> => ((await role.status()).stewards as Record<string, { last?: Last }>)[s]?.last;

describe('a witness that cannot reach its steward says so', () => {
  it('each failed start round is its last refusal; once the last round has failed, one warning, not one per round', async () => {
    const s = stewardChain(2);
    await rig(new Map([[s.did, s.chain]]), async ({ net, start }) => {
      net.fails.set(s.did, 'unreached');
      // rounds far enough apart that the first failure is seen before the next round on a loaded machine; a round that
      // comes while the one before is still asking joins it (#schedule), so the last round's failure, not a third
      // call, is what to wait for (a CI run under load asked twice and timed out waiting for a third)
      const role = await start({ stewards: [s.did], startCatchUpMs: [0, 300, 600] });
      await until(async () => (await lastOf(role, s.did))?.refused === 'NET_DIAL_FAILED', 'the first failure shown');
      assert.equal(net.warns.length, 0, 'not warned while rounds are left');
      await until(() => net.warns.length >= 1, 'the last round failed');
      assert.ok(net.calls >= 2 && net.calls <= 3, `asked once a round at most (${net.calls})`);
      await role.settled();
      assert.equal(net.warns.length, 1, JSON.stringify(net.warns));
      assert.equal(net.warns[0]!.steward, s.did);
      assert.equal(net.warns[0]!.code, 'NET_DIAL_FAILED');
      assert.match(net.warns[0]!.msg, /not reached by any of the start catch-up’s attempts.*network\.steward.*swarm key/);
      assert.equal((await lastOf(role, s.did))?.refused, 'NET_DIAL_FAILED');
    });
  });

  it('a key that answers but serves no ledger is WITNESS_NOT_A_STEWARD (a wrong network.steward), warned of as such', async () => {
    const s = stewardChain(2);
    await rig(new Map(), async ({ net, start }) => {
      net.fails.set(s.did, 'no-ledger');
      const role = await start({ stewards: [s.did], startCatchUpMs: [0] });
      await until(() => net.warns.length === 1, 'the warning');
      assert.equal((await lastOf(role, s.did))?.refused, WITNESS_NOT_A_STEWARD);
      assert.equal(net.warns[0]!.code, WITNESS_NOT_A_STEWARD);
      assert.match(net.warns[0]!.msg, /serves no ledger.*network\.steward/);
    });
  });

  it('a steward reached at a later round: the failure shown before goes (nothing new to cosign is no refusal)', async () => {
    const s = stewardChain(2);
    await rig(new Map([[s.did, s.chain]]), async ({ net, start }) => {
      net.fails.set(s.did, 'unreached');
      const role = await start({ stewards: [s.did], startCatchUpMs: [0, 80] });
      await until(async () => (await lastOf(role, s.did))?.refused === 'NET_DIAL_FAILED', 'the first failure shown');
      net.fails.delete(s.did);
      await until(async () => (await role.witness.held(s.did)).length === 2, 'cosigned once reached');
      assert.equal((await lastOf(role, s.did))?.length, 2);
      assert.equal(net.warns.length, 0);
    });
  });

  it('heads this node dropped as signed by another key than network.steward are shown (foreignHeads)', async () => {
    const s = stewardChain(1);
    const real = stewardChain(1);
    await rig(new Map([[s.did, s.chain]]), async ({ net, start }) => {
      const role = await start({ stewards: [s.did], startCatchUpMs: [] });
      assert.equal((await role.status()).foreignHeads, undefined);
      net.foreign = { dropped: 3, last: { signer: real.did, at: 900 } };
      assert.deepEqual((await role.status()).foreignHeads, { dropped: 3, last: { signer: real.did, at: 900 } });
    });
  });
});

describe('a witness its overlay does not name (QA witness pass, finding 9)', () => {
  it('status says so (`notNamed`, with the list) beside what it cosigns; a named one, or an overlay naming none, does not', async () => {
    const s = stewardChain(2);
    const other = stewardChain(1).did;
    await rig(new Map([[s.did, s.chain]]), async ({ start }) => {
      const unnamed = await start({ stewards: [s.did], startCatchUpMs: [0], overlayWitnesses: [other] });
      await until(async () => (await unnamed.witness.held(s.did)).length === 2, 'cosigned');
      assert.deepEqual((await unnamed.status()).notNamed, { witnesses: [other] });
      const me = (await unnamed.status()).witness as string;
      assert.equal((await (await start({ stewards: [s.did], startCatchUpMs: [], overlayWitnesses: [other, me] })).status()).notNamed, undefined);
      assert.equal((await (await start({ stewards: [s.did], startCatchUpMs: [] })).status()).notNamed, undefined);
    });
  });
});
