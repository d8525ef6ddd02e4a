/**
 * A witness cosigning a long run (src/ledger/witness.ts) keeps its daemon's
 * event loop free: the cheap checks (decoding, the seq/prev chain, the relation
 * to the held head) come before any signature, so a run that does not chain is
 * refused without one, and the signatures of a long run are verified in worker
 * threads (src/ledger/replay.ts verifyEntries) while the loop goes on ticking.
 * Structural, not timed: the test watches for the worker threads (async_hooks
 * `WORKER`) and for setImmediate ticks while one is running.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer, didFromPublicKey } from '../../../src/records/index.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { Witness, sealEntries } from '../../../src/ledger/index.js';
import { admitted, tempDir } from './helpers.js';

const codeIs = (code: string) => (e: unknown) => e instanceof C0Error && e.code === code;

async function withWitness(fn: (w: Witness) => Promise<void>): Promise<void> {
  const t = tempDir('c0-witness-long-');
  const db = await openDb(t.dir);
  try {
    await fn(new Witness(db, Ed25519Signer.generate(), { now: fakeClock() }));
  } finally {
    await closeDb(db);
    t.cleanup();
  }
}

/** Run `fn` counting the worker threads started and the setImmediate ticks that ran while one existed. */
async function watched<T>(fn: () => Promise<T>): Promise<{ value?: T; error?: unknown; workers: number; ticksWithWorker: number }> {
  let workers = 0;
  let ticksWithWorker = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'WORKER') workers++;
    },
  }).enable();
  let done = false;
  const tick = () => {
    if (done) return;
    if (workers > 0) ticksWithWorker++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { value: await fn(), workers, ticksWithWorker };
  } catch (error) {
    return { error, workers, ticksWithWorker };
  } finally {
    done = true;
    hook.disable();
  }
}

describe('Witness: a long run', () => {
  const signer = Ed25519Signer.generate();
  const S = didFromPublicKey(signer.publicKey);
  const n = 2_500; // past the run length from which the witness verifies in worker threads
  const chain = sealEntries(Array.from({ length: n }, (_, i) => admitted(`c${i}`)), signer);
  const bytes = chain.map((e) => e.bytes);

  it('verifies its signatures in worker threads while the event loop keeps ticking, then cosigns', async () => {
    await withWitness(async (w) => {
      const r = await watched(() => w.cosign(S, bytes));
      assert.equal(r.error, undefined);
      assert.equal(r.value!.record.length, n);
      assert.ok(r.workers > 0, 'the signatures are verified off the main thread');
      assert.ok(r.ticksWithWorker > 0, 'the event loop ran while the workers verified');
      assert.deepEqual(await w.held(S), { length: n, head: chain[n - 1]!.address });
    });
  });

  it('a bad signature anywhere in a long run is still refused at its index (WITNESS_BAD_ENTRY), nothing held', async () => {
    await withWitness(async (w) => {
      const run = [...bytes];
      // the last entry's signature (its last byte): the record still decodes, and nothing follows it to link to it
      const t = Uint8Array.from(run[n - 1]!);
      t[t.length - 1]! ^= 1;
      run[n - 1] = t;
      const r = await watched(() => w.cosign(S, run));
      assert.ok(codeIs('WITNESS_BAD_ENTRY')(r.error) && (r.error as C0Error).field === `entries[${n - 1}]`, String(r.error));
      assert.ok(r.workers > 0);
      assert.equal((await w.held(S)).length, 0);
    });
  });

  it('a run that does not chain is refused before any signature is checked (a bad signature earlier does not matter), in no worker', async () => {
    await withWitness(async (w) => {
      const run = [...bytes];
      // entry 0's signature is bad, and the last entry does not link: what a key that signed a long run once in
      // advance serves to stall a witness. The chain is checked first, so no signature is verified at all.
      const t = Uint8Array.from(run[0]!);
      t[t.length - 1]! ^= 1;
      run[0] = t;
      run[n - 1] = sealEntries([admitted('x')], signer, { start: { length: n - 1, head: 'sha256:' + '1'.repeat(64) } })[0]!.bytes;
      const r = await watched(() => w.cosign(S, run));
      assert.ok(codeIs('WITNESS_BROKEN_LINK')(r.error), `refused ${(r.error as C0Error).code}`);
      assert.equal(r.workers, 0, 'no signature work was started');
      assert.equal((await w.held(S)).length, 0);
    });
  });
});
