/**
 * A gang's admission whose answer was lost (s35a finding 1, the gang path: src/node/gang-routes.ts admitGang): the
 * steward admitted the gang and answered into a stream that broke before the buyer read it. Before, the route failed
 * NET_STREAM_FAILED and the gang's claim held its devices until its deadline (up to 24 h); now it asks again and gets
 * `admitted`. A route broken off by the node's stop while its ask is in the steward's hands withdraws the gang.
 * The whole Steward over a real Ledger and LevelDB in a temp dir (test/unit/roles/steward-stub.ts), reached through a
 * fake network that can break a stream.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Buffer } from 'node:buffer';
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { admitGang, GANG_REASK_MS } from '../../../src/node/gang-routes.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { silentLogger } from '../../../src/util/log.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P, byDid } from '../market/fixtures.js';
import { stewardIdentity, stewardOnStub, stubBuyer, until } from '../roles/steward-stub.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;
type Frame = Record<string, unknown>;

async function rig(dir: string, how: 'lost' | 'held' | 'always', clock: () => number = () => NOW) {
  writeFileSync(join(dir, 'tree.yaml'), TREE);
  const db = await openDb(join(dir, 'db'));
  const st = await stewardOnStub(dir, db, new Map());
  const sent: string[] = [];
  let asks = 0;
  const stop = new AbortController();
  const request = async (_to: string, _p: string, frames: CborValue[], opts: { onFrame?: (f: CborValue) => void; signal?: AbortSignal }) => {
    const req = frames[0] as Frame;
    sent.push(String(req.op));
    const first = req.op === 'admit-gang' && ++asks === 1;
    const lose = req.op === 'admit-gang' && ((first && how === 'lost') || how === 'always');
    const into: Frame[] = [];
    try {
      await st.ask(req, stubBuyer.did, into, lose ? async () => Promise.reject(new C0Error('NET_STREAM_FAILED', 'reset')) : undefined);
    } catch (e) {
      if (lose) throw new C0Error('NET_STREAM_FAILED', 'the stream ended before its end frame');
      throw new C0Error((e as C0Error).code, (e as Error).message, { detail: { remote: true } });
    }
    if (first && how === 'held') {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 3_000);
        opts.signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
      throw new C0Error('NET_STREAM_FAILED', 'the stream ended before its end frame');
    }
    for (const f of into) opts.onFrame?.(f as CborValue);
    return into as CborValue[];
  };
  const o = { name: 't', clock, log: silentLogger(), d: { network: { steward: stewardIdentity.did }, config: {} }, net: { request }, buyer: { stopping: stop.signal } } as unknown as OverlayNode;
  const members = byDid([P(31), P(32)]);
  const run = buildRun(stringify({ name: 'g', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: members.map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) }), stubBuyer.signer, NOW).bundle.run;
  const body = { run: Buffer.from(run.bytes).toString('hex'), entitlement: 'ml', energy: { uj: 20_000_000, grade: 'Estimator' }, devicesPerMember: 1, deadlineMs: 3_600_000 };
  const events = async () => (await st.s.ledger.records(0)).map((e) => e.event);
  const close = async () => {
    await st.s.stop();
    await closeDb(db);
  };
  return { o, body, sent, events, stop, close, asks: () => asks };
}

describe('a gang admission whose answer was lost', () => {
  it('the `admitted` answer lost with its stream: the route asks again and answers `admitted`; one Admitted entry', async () => {
    const t = tempDir('c0-gang-lost-');
    const r = await rig(t.dir, 'lost');
    try {
      const { admission } = await admitGang(r.o, r.body);
      assert.equal(admission.verdict, 'Admit');
      assert.equal(r.asks(), 2);
      assert.deepEqual(await r.events(), ['Admitted']);
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('the node stopping while the ask is in the steward’s hands: the route ends with the stop’s reason and the gang is withdrawn', async () => {
    const t = tempDir('c0-gang-lost-');
    const r = await rig(t.dir, 'held');
    try {
      const asked = admitGang(r.o, r.body);
      await until(async () => (await r.events()).includes('Admitted'), 'the gang admitted');
      r.stop.abort(new C0Error('JOB_INTERRUPTED', 'this node is stopping'));
      await assert.rejects(asked, (e: unknown) => e instanceof C0Error && e.code === 'JOB_INTERRUPTED');
      assert.deepEqual(r.sent, ['admit-gang', 'withdraw']);
      assert.deepEqual(await r.events(), ['Admitted', 'Released']);
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('every answer lost: the route stops asking after GANG_REASK_MS (not at the gang’s deadline, an hour on), withdraws the gang and fails with the transport’s code', { timeout: 30_000 }, async () => {
    const t = tempDir('c0-gang-lost-');
    let now = NOW;
    // each reading of the clock is 20 s on: the asking's window passes in a few rounds of its backoff
    const r = await rig(t.dir, 'always', () => (now += 20_000));
    try {
      await assert.rejects(admitGang(r.o, r.body), (e: unknown) => e instanceof C0Error && e.code === 'NET_STREAM_FAILED');
      assert.ok(now - NOW <= GANG_REASK_MS + 100_000, `gave up ${now - NOW} ms on`);
      assert.equal(r.sent.at(-1), 'withdraw');
      assert.deepEqual(await r.events(), ['Admitted', 'Released'], 'the gang admitted into the lost answers is released by the withdraw');
    } finally {
      await r.close();
      t.cleanup();
    }
  });
});
