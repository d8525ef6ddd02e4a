/**
 * An `admitted` answer lost with its stream (s35a finding 1): the buyer's `admit` reached the steward, which appended
 * `Admitted` and answered into a stream that then broke (a half-open link the connection monitor aborted, a reset),
 * before any `queued` frame. Before, the client asked again only after `queued`, so the run failed NET_STREAM_FAILED
 * and nothing withdrew: the claim held its reservation and devices until the job's deadline. Now the buyer asks again
 * (the steward answers a re-ask of an admitted claim `admitted` again) and the run goes on; and a run broken off by
 * the node's stop while its ask is in the steward's hands withdraws the claim as it gives up.
 *
 * The Buyer over fakes, its admission the daemon's (admitJob), asking the whole Steward over a real Ledger and LevelDB
 * in a temp dir (steward-stub.ts) through a fake network that can break a stream.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job } from '../../../src/records/kinds.js';
import { admitJob, type StewardRequest } from '../../../src/roles/admission-client.js';
import type { JobSpec } from '../../../src/roles/buyer.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';
import { stewardOnStub, until } from './steward-stub.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;
const ME = P(1);
const A = P(31);
type Frame = Record<string, unknown>;

/**
 * The steward behind a fake network. `breakAdmit(n)` says what happens to the n-th admit stream (1-based): `lost`,
 * the steward decides and answers into a stream that is already dead, then the buyer's side fails
 * NET_STREAM_FAILED; `held`, the steward decides and answers, but nothing reaches the buyer until its signal aborts
 * (or 3 s pass); otherwise a plain exchange. An error the steward answers comes back as a remote one, as the network
 * delivers it.
 */
async function rig(dir: string, breakAdmit: (n: number) => 'lost' | 'held' | undefined) {
  writeFileSync(join(dir, 'tree.yaml'), TREE);
  const db = await openDb(join(dir, 'db'));
  const st = await stewardOnStub(dir, db, new Map());
  const sent: string[] = [];
  let admits = 0;
  const request: StewardRequest = async (frames, opts) => {
    const req = frames[0] as Frame;
    sent.push(String(req.op));
    const n = req.op === 'admit' ? ++admits : 0;
    const how = n ? breakAdmit(n) : undefined;
    const into: Frame[] = [];
    const dead = async () => {
      throw new C0Error('NET_STREAM_FAILED', 'the stream was reset');
    };
    try {
      await st.ask(req, ME.did, into, how === 'lost' ? dead : undefined);
    } catch (e) {
      if (how === 'lost') throw new C0Error('NET_STREAM_FAILED', 'the stream ended before its end frame');
      throw new C0Error((e as C0Error).code ?? 'ERR', (e as Error).message, { detail: { remote: true } });
    }
    if (how === 'held') {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 3_000);
        opts.signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
      throw new C0Error('NET_STREAM_FAILED', 'the stream ended before its end frame');
    }
    for (const f of into) opts.onFrame?.(f as CborValue);
    return into as CborValue[];
  };
  const admission = (job: Opened<Job>, spec: JobSpec, onQueued: (r: string, rs: string[]) => void, signal: AbortSignal) =>
    admitJob({ request, job, spec, clock: () => NOW, onQueued, signal, overlay: 't', sleep: async () => {}, random: () => 0.5 });
  const withdraw = async (job: Opened<Job>) => void (await request([{ op: 'withdraw', job: job.address } as never], { limits: { deadlineMs: 15_000 } }));
  const events = async () => (await st.s.ledger.records(0)).map((e) => e.event);
  const close = async () => {
    await st.s.stop();
    await closeDb(db);
  };
  return { st, sent, admission, withdraw, events, close, admits: () => admits };
}

describe('an admission whose answer was lost', () => {
  it('an `admitted` answer lost with its stream before any `queued`: the buyer asks again, gets `admitted`, and the job is announced', async () => {
    const t = tempDir('c0-admission-lost-');
    const r = await rig(t.dir, (n) => (n === 1 ? 'lost' : undefined));
    try {
      const f = buyerOnFakes(ME, {
        providers: [A],
        exec: async function* () {
          yield { t: 'refused', code: 'EXEC_BUSY', message: 'busy' };
        },
        deps: { admission: r.admission, withdraw: r.withdraw, reclaimed: async () => 'no' },
      });
      const seen: string[] = [];
      const result = await f.buyer.run(fakeSpec({ entitlement: 'ml', energy: { uj: 10_000_000, grade: 'Estimator' } }), (e) => seen.push(e.e));
      assert.equal(r.admits(), 2, 'asked again after the lost answer');
      assert.equal(result.admission?.verdict, 'Admit');
      assert.ok(result.admission?.proof instanceof Uint8Array, 'the re-ask carries the claim’s Admitted entry');
      assert.ok(f.published.some((p) => p.kind === 'job'), 'the job was announced');
      assert.deepEqual(f.execs, [A.did], 'and run');
      // one Admitted entry for both asks; the run's failure then withdrew it as any failed run's
      assert.equal(result.status, 'failed');
      assert.deepEqual(await r.events(), ['Admitted', 'Released']);
      assert.ok(seen.includes('admission'));
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('the node stopping while the ask is in the steward’s hands: the run ends interrupted and the claim the steward admitted is withdrawn', async () => {
    const t = tempDir('c0-admission-lost-');
    const r = await rig(t.dir, () => 'held');
    try {
      const f = buyerOnFakes(ME, {
        providers: [A],
        exec: async function* () {
          yield { t: 'refused', code: 'EXEC_BUSY', message: 'busy' };
        },
        deps: { admission: r.admission, withdraw: r.withdraw, reclaimed: async () => 'no' },
      });
      const running = f.buyer.run(fakeSpec({ entitlement: 'ml', energy: { uj: 10_000_000, grade: 'Estimator' } }));
      // the steward appended Admitted; its answer is held on the way back
      await until(async () => (await r.events()).includes('Admitted'), 'the claim admitted');
      await f.buyer.interrupt();
      const result = await running;
      assert.equal(result.status, 'interrupted');
      assert.equal(f.published.length, 0, 'nothing announced');
      assert.deepEqual(r.sent, ['admit', 'withdraw'], 'the claim was withdrawn as the asking gave up');
      assert.deepEqual(await r.events(), ['Admitted', 'Released']);
    } finally {
      await r.close();
      t.cleanup();
    }
  });
});
