/**
 * What a provider owes at start for work of an earlier run of the node
 * (docs/node.md "Orphaned work after a crash", "A receipt the buyer did not get
 * on the stream", "Changing roles"):
 *
 *   1. the `exec` process groups a crashed run left behind are ended
 *      (ProcessRegistry.reap), and each group's job without a receipt gets the
 *      failed receipt EXEC_PROVIDER_CRASHED;
 *   2. each run note left (work accepted and never given a receipt: a builtin's,
 *      an http call's, an exec whose group was never recorded) gets the same;
 *   3. the receipts kept untried (never acknowledged by their buyer on the exec
 *      stream nor sent directly) are sent to their buyer now and gossiped.
 *
 * One implementation for both places it runs: the provider role's start
 * (Provider.start, before its first advert) and, when the role is no longer
 * configured on the overlay while its store still holds such work, the node's
 * start (src/node/provider-wiring.ts `providerLeftovers`), which quotes, claims
 * and advertises nothing.
 */
import { C0Error } from '../../errors.js';
import { open, seal, type Opened } from '../../records/envelope.js';
import { T, type Job, type Offer, type Receipt } from '../../records/kinds.js';
import { openTaken } from '../../records/taken.js';
import type { Ed25519Signer } from '../../records/ed25519.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/log.js';
import type { ProcessRegistry } from './orphans.js';
import { receiptFor } from './receipt.js';

export interface CrashRecoveryDeps {
  signer: Ed25519Signer;
  /** This provider's DID: a recorded job or offer that is not its own signs nothing. */
  did: string;
  clock: Clock;
  log: Logger;
  /** The runs store's view (src/store/provider-runs.ts). */
  state: {
    hasReceiptFor(job: string): Promise<boolean>;
    /** The run notes held; absent: none are kept. */
    notes?(): Promise<Array<{ job: string; jobEnvelope: Uint8Array; offerEnvelope: Uint8Array; startedAt: number }>>;
    dropNote?(job: string): Promise<void>;
  };
  /** Where running `exec` process groups were recorded (orphans.ts); absent: none. */
  processes?: ProcessRegistry;
  /**
   * Keep a receipt signed here with its offer (the runs entry with its wait for the buyer, the job, the evidence):
   * the provider's `onReceipt` (provider-wiring.ts `keepReceiptHere`).
   */
  keep(r: Opened<Receipt>, offer: Opened<Offer>, job: Opened<Job>): Promise<void>;
  /** Gossip a receipt (no peers is not an error). */
  publish(r: Opened<Receipt>): Promise<unknown>;
  /** Send a receipt to its buyer directly, now and when it connects (receipt-delivery.ts); not awaited. */
  deliver?(r: Opened<Receipt>): void;
  /** Send each receipt restored untried now (ReceiptDelivery.resume); returns them, to be gossiped too. */
  resumeDelivery?(): Array<Opened<Receipt>>;
  /** Count a failed receipt signed here (c0mpute_jobs_total{role="provider"}). */
  onOutcome?(status: 'failed', workload: string): void;
  /** A receipt as signed (a pool member's is the pool's); default as is. */
  shape?(r: Receipt): Receipt;
}

/** Run the recovery (1–3 above), in that order; each step logs and carries on past a failure of its own. */
export async function recoverCrashedWork(d: CrashRecoveryDeps): Promise<void> {
  await reapOrphans(d);
  await failCrashedRuns(d);
  await resumeDelivery(d);
}

/**
 * End the process groups a crashed previous run left behind, and sign the failed receipt (EXEC_PROVIDER_CRASHED) of
 * each job that has none yet. A pool member's group records carry no envelopes: its pool fails that work from the
 * dispatch trail, so only the group is ended.
 */
async function reapOrphans(d: CrashRecoveryDeps): Promise<void> {
  if (!d.processes) return;
  for (const { rec, outcome } of await d.processes.reap()) {
    d.log.warn({ job: rec.job, pid: rec.pid, pgid: rec.pgid, outcome }, outcome === 'killed' ? 'ended the work a crashed run left behind' : 'found the record of work a crashed run left behind');
    try {
      if (!rec.jobEnvelope || !rec.offerEnvelope || (await d.state.hasReceiptFor(rec.job))) continue;
      const message = `the provider stopped while the work ran; on restart its process group had ${outcome === 'killed' ? 'to be ended' : 'already exited'}`;
      await signCrashed(d, Buffer.from(rec.jobEnvelope, 'base64'), Buffer.from(rec.offerEnvelope, 'base64'), rec.job, rec.startedAt, message).catch((e) => {
        // as before: a record that is not this job's, or not this provider's, signs nothing
        if ((e as C0Error).code !== 'EXEC_NOTE_MISMATCH') throw e;
      });
    } catch (e) {
      d.log.warn({ job: rec.job, err: (e as Error).message }, 'could not sign the failed receipt of work a crashed run left behind');
    }
  }
}

/**
 * Sign the failed receipt (EXEC_PROVIDER_CRASHED) of each job noted as accepted here whose receipt was never kept:
 * a builtin's or an http call's work (or an exec's whose group was never recorded) a crash took with it; an exec
 * group's job was failed by reapOrphans just before, which superseded its note.
 */
async function failCrashedRuns(d: CrashRecoveryDeps): Promise<void> {
  if (!d.state.notes) return;
  let notes;
  try {
    notes = await d.state.notes();
  } catch (e) {
    d.log.warn({ err: (e as Error).message }, 'could not read the notes of work a crashed run left behind');
    return;
  }
  for (const n of notes) {
    d.log.warn({ job: n.job, startedAt: n.startedAt }, 'found work a crashed run accepted and never finished');
    try {
      if (await d.state.hasReceiptFor(n.job)) {
        await d.state.dropNote?.(n.job);
        continue;
      }
      await signCrashed(d, n.jobEnvelope, n.offerEnvelope, n.job, n.startedAt, 'the provider stopped while the work ran; it ended with the process');
    } catch (e) {
      d.log.warn({ job: n.job, err: (e as Error).message }, 'could not sign the failed receipt of work a crashed run left behind');
      await d.state.dropNote?.(n.job).catch(() => undefined);
    }
  }
}

/** Sign, keep, gossip and send to its buyer the failed receipt (EXEC_PROVIDER_CRASHED) of work a crash ended. */
async function signCrashed(d: CrashRecoveryDeps, jobBytes: Uint8Array, offerBytes: Uint8Array, address: string, startedAt: number, message: string): Promise<void> {
  const job = open(jobBytes, T.job);
  const offer = openTaken(offerBytes, job);
  if (job.address !== address || offer.signer !== d.did) throw new C0Error('EXEC_NOTE_MISMATCH', 'the recorded job or offer is not this job’s, or not this provider’s');
  const plain = receiptFor(job, offer, {
    startedAt,
    completedAt: Math.max(d.clock(), startedAt),
    // Nothing was measured across the crash: no energy is claimed.
    energy: { uj: 0, grade: 'Estimator' },
    failure: { code: 'EXEC_PROVIDER_CRASHED', message },
  });
  const receipt = d.shape ? d.shape(plain) : plain;
  const env = seal(T.receipt, receipt, d.signer);
  await d.keep(env, offer, job);
  d.onOutcome?.('failed', receipt.workload);
  await d.publish(env).catch(() => 0);
  // its buyer heard nothing on the stream that broke with the crash
  d.deliver?.(env);
}

/**
 * Receipts kept before the restart whose buyer never showed it got them (the provider was killed while the output
 * streamed, or before the receipt could be sent): sent to their buyer directly (resumeDelivery) and gossiped, since
 * neither may have happened.
 */
async function resumeDelivery(d: CrashRecoveryDeps): Promise<void> {
  for (const r of d.resumeDelivery?.() ?? []) {
    d.log.info({ job: r.record.job, receipt: r.address, buyer: r.record.buyer, status: r.record.status }, 'a receipt kept before the restart was never acknowledged by its buyer: sent to it directly, and gossiped');
    await d.publish(r).catch(() => 0);
  }
}
