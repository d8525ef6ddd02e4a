/**
 * A training member bought as a market job (builtin `builtin.train-member`;
 * docs/training.md "A training run bought as a gang"): the job's input is a run
 * bundle naming this provider among its members; the provider joins the run on
 * its own node (its DID, its libp2p host: members reach each other by DID),
 * trains to the end, and returns JSON {run, member, status, weights, accuracy,
 * epochs} as the output its signed receipt covers. A run this provider is not
 * a member of is EXEC_BAD_INPUT; a run that stops is the job's failure. The
 * job's params cite the gang claim {claim: run address, member: index}; a
 * citation that is not this run, or whose index is past the gang or names
 * another provider, is TRAIN_GANG_CITE.
 */
import { join } from 'node:path';
import { C0Error } from '../../errors.js';
import { open, type Opened } from '../../records/envelope.js';
import { TRAIN_T, type TrainRun } from '../../training/record-kinds.js';
import { aborted, type ExecContext } from '../provider/executors.js';
import { TrainerWorker } from './worker.js';
import { citeOf } from '../gang-cite.js';
import { hashHex } from '../../records/address.js';
import { isRunning, markRunning, writeMark, type MemberJobMark } from './run-dirs.js';
import { checkMemberBounds } from './run-bounds.js';

export { MAX_MEMBER_STEPS, checkMemberBounds } from './run-bounds.js';

export async function runMemberJob(ctx: ExecContext): Promise<Uint8Array> {
  const host = ctx.host;
  if (!host) throw new C0Error('EXEC_FAILED', 'builtin.train-member needs the provider node');
  let run: Opened<TrainRun>;
  try {
    const j = JSON.parse(new TextDecoder().decode(ctx.input)) as { run: string };
    run = open(new Uint8Array(Buffer.from(j.run, 'hex')), TRAIN_T.run) as Opened<TrainRun>;
  } catch {
    throw new C0Error('EXEC_BAD_INPUT', 'the input is not a run bundle ({run: <envelope hex>})');
  }
  if (!run.record.members.includes(host.did)) throw new C0Error('EXEC_BAD_INPUT', 'this provider is not a member of the run');
  // A job citing a gang claim (docs/training.md "A gang on a stewarded overlay"): the claim is this run, and its member index names this provider.
  const cite = citeOf(ctx.params);
  if (ctx.params && !cite) throw new C0Error('TRAIN_GANG_CITE', 'params must cite the gang claim as {claim, member}');
  if (cite && (cite.claim !== run.address || !Number.isSafeInteger(cite.member) || cite.member < 0 || cite.member >= run.record.members.length || run.record.members[cite.member] !== host.did)) {
    throw new C0Error('TRAIN_GANG_CITE', `the job cites member ${cite.member} of claim ${cite.claim.slice(0, 80)}, which is not this provider in this run`);
  }
  checkMemberBounds(run.record);
  const total = run.record.epochs * run.record.stepsPerEpoch;
  const dir = join(host.dir, run.address.slice(7, 23));
  // the run's directory is this job's while it runs: not reconciled nor pruned (run-dirs.ts), nor taken by a second job
  if (isRunning(dir)) throw new C0Error('TRAIN_BUSY', `a member job of run ${run.address} already runs on this node`);
  const release = markRunning(dir);
  let mark: MemberJobMark | undefined;
  try {
    const w = new TrainerWorker({
      signer: host.signer,
      did: host.did,
      run,
      addrs: {},
      net: host.net,
      dir,
      ...(host.abuse ? { abuse: host.abuse } : {}),
      clock: () => Date.now(),
      onEvent: (e) => {
        if (e.e === 'step') ctx.onProgress({ fraction: (e.step + 1) / total, units: e.step + 1, message: `step ${e.step} loss ${e.loss.toFixed(4)}` });
      },
    });
    // the directory is now the run's (not refused: TRAIN_RUN_EXISTS): marked as this job's, so its start after a
    // crash ends it and the job history drops it (run-dirs.ts)
    mark = { inputHash: hashHex(ctx.input), startedAt: Date.now() };
    writeMark(dir, mark);
    await w.start();
    // the job's end (its timeout: EXEC_TIMEOUT; a stop: EXEC_ABORTED) closes the mailbox: the run stops at the next
    // step boundary or receive with that failure, so the receipt is a failed one timed at the deadline, not past it
    const abort = () => w.box.close(aborted(ctx.signal));
    ctx.signal.addEventListener('abort', abort, { once: true });
    if (ctx.signal.aborted) abort();
    try {
      await w.join();
      await w.run();
    } finally {
      ctx.signal.removeEventListener('abort', abort);
      await w.stop();
    }
    const s = w.statusView();
    return new TextEncoder().encode(JSON.stringify({ run: run.address, member: host.did, status: s.status, weights: s.weights, accuracy: s.accuracy, epochsCommitted: s.epochsCommitted, epochs: s.epochs }));
  } finally {
    try {
      if (mark) writeMark(dir, { ...mark, endedAt: Date.now() });
    } catch {
      // not ended on disk (a full disk): the next start ends it (reconcileRunDirs), and the history drops it after
    }
    release();
  }
}
