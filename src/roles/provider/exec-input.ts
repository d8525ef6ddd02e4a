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

/** Detail of the NET_DEADLINE an input that lapsed is thrown with (inputLapse reads it back). */
export interface InputLapse {
  phase: 'input';
  /** Bytes of input in when it lapsed, and the size the job declared (sealed: with the overhead). */
  received: number;
  expected: number;
}

/** The lapse, when `e` is the NET_DEADLINE readExecInput threw because the input stopped coming in time. */
export function inputLapse(e: unknown): InputLapse | undefined {
  if (!(e instanceof C0Error) || e.code !== 'NET_DEADLINE' || e.detail?.phase !== 'input') return undefined;
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
 * InputLapse detail (inputLapse).
 */
export async function readExecInput(io: ExecIO, header: ExecHeader, job: Opened<Job>, limits: InputLimits): Promise<Uint8Array> {
  const expected = job.record.input.size + (job.record.inputSealed === 'yes' ? SEALED_OVERHEAD_BYTES : 0);
  let off = 0;
  const next = async (): Promise<unknown> => {
    try {
      return await io.next();
    } catch (e) {
      throw lapsed(io, e, off, expected);
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
  const clock = limits.clock ?? monotonicClock;
  const start = clock();
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
  if (off !== expected) throw new C0Error('EXEC_INPUT_MISMATCH', `input of ${off} bytes where the job says ${expected}`);
  return buf;
}

/** What a failed read of the input is thrown as: a lapse when the stream's own deadline ended it, else as it came. */
function lapsed(io: ExecIO, e: unknown, received: number, expected: number): unknown {
  const why: unknown = io.signal.aborted ? io.signal.reason : undefined;
  if (!(why instanceof C0Error) || why.code !== 'NET_DEADLINE') return e;
  const detail: InputLapse = { phase: 'input', received, expected };
  return new C0Error('NET_DEADLINE', `${why.message}: ${received} of ${expected} bytes of input in`, { detail: { ...detail }, cause: e });
}
