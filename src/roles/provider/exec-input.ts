/**
 * The provider's request phase of `/c0mpute/exec/1` (src/roles/exec-protocol.ts;
 * docs/network.md "Direct streams: limits and framing"): once the header's
 * records checked out, reserve the declared input in the node's byte budget,
 * say `ready`, and read the input chunks under a deadline that grants the
 * declared size a minimum rate. Then the run phase gets its own deadline: the
 * job's timeout (or what is left before its deadline) plus a margin to deliver
 * output and receipt.
 */
import { C0Error } from '../../errors.js';
import { monotonicClock } from '../../util/clock.js';
import type { Opened } from '../../records/envelope.js';
import type { Job } from '../../records/kinds.js';
import { EXEC_CHUNK_BYTES, parseInputChunk, SEALED_OVERHEAD_BYTES, type ExecFrame, type ExecHeader } from '../exec-protocol.js';

/** What the provider needs of the stream (a StreamContext of src/net/protocols.ts). */
export interface ExecIO {
  next(): Promise<unknown>;
  send(f: ExecFrame): Promise<void>;
  signal: AbortSignal;
  /** Reserve bytes of the node's request budget (throws NET_BUFFER_LIMIT). */
  reserve(bytes: number): void;
  setDeadline(ms: number, what: string): void;
  /** The remote peer (its PeerId), for what a refusal costs it and the log (absent: unknown). */
  peer?: string;
  /**
   * Settles when the buyer is done with the stream from now on (StreamContext.callerEnded): `closed` when it closed
   * its writing side, `reset` when it reset the stream (or its connection closed), `lost` when the stream ended from
   * this side (its connection died). Which of them shows the buyer got the receipt: receiptAcknowledged
   * (exec-protocol.ts). Absent: nothing can be told, and a receipt written is handed to the re-delivery path as well.
   */
  callerEnded?(): Promise<'closed' | 'reset' | 'lost'>;
}

export interface InputLimits {
  maxInputBytes: number;
  /** The header phase, and the base of the input phase, ms. */
  requestMs: number;
  /** The input must arrive at least this fast (bytes per second) on top of requestMs. */
  minInputBytesPerSec: number;
  /** The monotonic clock the input's progress is timed on (default monotonicClock). */
  clock?: () => number;
}

/**
 * The input phase's deadline, ms from `now`, once `received` of `expected` bytes are in (`start`: when `ready` went;
 * `start` and `now` on one monotonic clock). The input must keep arriving at `minInputBytesPerSec` on average, with
 * `requestMs` and the next chunk's time at that rate to spare, and may never pause longer than that spare: a sender at
 * the rate (or faster) is never cut, whatever its chunks' timing; one that stalls is cut `requestMs` (+ one chunk at
 * the rate, 2 s by default) after its last chunk, or after `ready` if it sends none, whatever size its job declares.
 * Never later than the whole declared input at the rate allows (`requestMs` + expected ÷ rate, the bound before this
 * rule: 158 s for 16 MiB). Before, that whole bound was the one deadline from `ready`: a buyer that sent nothing held
 * the slot for all of it (review s40 B F1).
 */
export function inputDeadlineMs(limits: Pick<InputLimits, 'requestMs' | 'minInputBytesPerSec'>, start: number, now: number, received: number, expected: number): number {
  const atRate = (bytes: number) => Math.ceil((bytes / limits.minInputBytesPerSec) * 1000);
  const onAverage = start + limits.requestMs + atRate(Math.min(expected, received + EXEC_CHUNK_BYTES));
  const noPause = now + limits.requestMs + atRate(Math.min(Math.max(0, expected - received), EXEC_CHUNK_BYTES));
  return Math.max(1, Math.min(onAverage, noPause) - now);
}

/**
 * A hold after `ready` that ends without the whole input (the caller reset the stream or ended it short, or its
 * connection dropped) counts as a lapse once it lasted longer than this, ms: 2 s, one 256 KiB chunk at the default
 * minimum rate. A buyer that gives up at once (it fails over, or stops) ends within a round trip or two of `ready` and
 * is not counted; one that holds the slot and resets just before the deadline is, as if it had let it pass (before,
 * a reset at 31 s was never a lapse and the slot could be held that way for ever: review s40 F2). Not scaled with
 * `minInputBytesPerSec`: a low configured rate must not widen the gap a holder may use for free.
 */
export const INPUT_HOLD_GRACE_MS = 2_000;

/** Detail of the error an input that lapsed is thrown with (inputLapse reads it back). */
export interface InputLapse {
  phase: 'input';
  /** Bytes of input in when it lapsed, and the size the job declared (sealed: with the overhead). */
  received: number;
  expected: number;
  /** How it ended: the stream's own deadline, or the caller (a reset, a short end, a lost connection) past the grace. */
  ended: 'deadline' | 'caller';
}

/**
 * The lapse, when `e` is what readExecInput threw because the input did not come whole in time: the NET_DEADLINE of
 * the stream's own deadline, or the caller's end of a hold longer than INPUT_HOLD_GRACE_MS (its own code kept).
 */
export function inputLapse(e: unknown): InputLapse | undefined {
  if (!(e instanceof C0Error) || e.detail?.phase !== 'input') return undefined;
  return e.detail as unknown as InputLapse;
}

/** Margin after the job's timeout to deliver output and receipt. */
export const RUN_MARGIN_MS = 60_000;

export function runPhaseMs(job: Job, now: number): number {
  return Math.max(1, Math.min(job.timeoutMs, job.deadline - now)) + RUN_MARGIN_MS;
}

/**
 * Read the input: inline in the header, or `ready` then chunks up to the declared size and the caller's end. An input
 * that does not come in time (the stream's deadline fired while it was read) is thrown as NET_DEADLINE with an
 * InputLapse detail (inputLapse); so is, with its own code, one the caller ended without the whole input (a reset, a
 * lost connection, a short end) more than INPUT_HOLD_GRACE_MS after `ready`.
 */
export async function readExecInput(io: ExecIO, header: ExecHeader, job: Opened<Job>, limits: InputLimits): Promise<Uint8Array> {
  const expected = job.record.input.size + (job.record.inputSealed === 'yes' ? SEALED_OVERHEAD_BYTES : 0);
  const clock = limits.clock ?? monotonicClock;
  let off = 0;
  /** When `ready` went (the slot is held for the input from then), on `clock`. */
  const ready: { at?: number } = {};
  const next = async (): Promise<unknown> => {
    try {
      return await io.next();
    } catch (e) {
      throw lapsed(io, e, off, expected, ready.at === undefined ? 0 : clock() - ready.at);
    }
  };
  if (header.input) {
    off = header.input.length;
    if ((await next()) !== undefined) throw new C0Error('EXEC_BAD_REQUEST', 'an inline input is the whole request: nothing may follow the header');
    return header.input;
  }
  // The whole declared size is reserved here, not as it arrives: an input half in must not be refused for the budget
  // another stream took meanwhile. A buyer that stalls holds it no longer than the deadline below lets it.
  io.reserve(expected);
  const start = (ready.at = clock());
  io.setDeadline(inputDeadlineMs(limits, start, start, 0, expected), 'input');
  await io.send({ t: 'ready' });
  const buf = new Uint8Array(expected);
  for (;;) {
    const v = await next();
    if (v === undefined) break;
    const data = parseInputChunk(v);
    if (off + data.length > expected) throw new C0Error('EXEC_INPUT_MISMATCH', `more input than the job's ${job.record.input.size} bytes`);
    buf.set(data, off);
    off += data.length;
    io.setDeadline(inputDeadlineMs(limits, start, clock(), off, expected), 'input');
  }
  if (off !== expected) {
    // ended short after a hold past the grace: a lapse as a reset is (lapsed)
    const heldMs = clock() - start;
    const detail: InputLapse = { phase: 'input', received: off, expected, ended: 'caller' };
    throw new C0Error('EXEC_INPUT_MISMATCH', `input of ${off} bytes where the job says ${expected}`, heldMs > INPUT_HOLD_GRACE_MS ? { detail: { ...detail } } : {});
  }
  return buf;
}

/**
 * What a failed read of the input is thrown as: a lapse when the stream's own deadline ended it, or when the caller
 * did (a reset, a lost connection) after holding the slot `heldMs` since `ready`, longer than INPUT_HOLD_GRACE_MS (the
 * error's own code kept, a NET_STREAM_FAILED when it had none); else as it came (before `ready`, heldMs is 0).
 */
function lapsed(io: ExecIO, e: unknown, received: number, expected: number, heldMs: number): unknown {
  const why: unknown = io.signal.aborted ? io.signal.reason : undefined;
  if (why instanceof C0Error && why.code === 'NET_DEADLINE') {
    const detail: InputLapse = { phase: 'input', received, expected, ended: 'deadline' };
    return new C0Error('NET_DEADLINE', `${why.message}: ${received} of ${expected} bytes of input in`, { detail: { ...detail }, cause: e });
  }
  if (heldMs <= INPUT_HOLD_GRACE_MS) return e;
  const detail: InputLapse = { phase: 'input', received, expected, ended: 'caller' };
  const code = e instanceof C0Error ? e.code : 'NET_STREAM_FAILED';
  return new C0Error(code, `${e instanceof Error ? e.message : String(e)}: ${received} of ${expected} bytes of input in, ${heldMs} ms after ready`, { detail: { ...detail }, cause: e });
}
