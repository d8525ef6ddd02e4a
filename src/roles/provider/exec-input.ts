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
  /** When the slot was taken for this request, on `clock` (a hold is timed from it: INPUT_HOLD_GRACE_MS). Default: when readExecInput is called. */
  heldSince?: number;
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
 * A hold of the slot that ends without the whole input counts as a lapse once it lasted longer than this, ms: 2 s,
 * one 256 KiB chunk at the default minimum rate. The hold is timed from the slot being taken (handleExec, right after
 * #checkHeader reserved it), not from `ready`: an inline input gets no `ready`, and a buyer that sent one and then
 * neither its end nor anything held the slot as surely (review s41 D F1). It ends without the input when the caller
 * resets the stream, ends it short or loses its connection, or when what it sent is refused (a malformed or oversized
 * chunk, more than declared, an input that is not the job's: still an abuse strike too). A buyer that gives up at
 * once (it fails over, or stops) ends within a round trip or two and is not counted; one that holds the slot and then
 * resets, or sends one bad frame, just before the deadline is, as if it had let it pass (before, a reset at 31 s was
 * never a lapse: review s40 F2; nor, until s41, a bad frame at 31 s or a reset of an inline input at 29 s). Not
 * scaled with `minInputBytesPerSec`: a low configured rate must not widen the gap a holder may use for free.
 */
export const INPUT_HOLD_GRACE_MS = 2_000;

/** Detail of the error an input that lapsed is thrown with (inputLapse reads it back). */
export interface InputLapse {
  phase: 'input';
  /** Bytes of input in when it lapsed, and the size the job declared (sealed: with the overhead). */
  received: number;
  expected: number;
  /**
   * How it ended: the stream's own deadline; the caller (a reset, a short end, a lost connection) past the grace; or
   * a refusal of what it sent (a bad chunk, more than declared, not the job's input) past the grace.
   */
  ended: 'deadline' | 'caller' | 'refused';
  /** How long the slot was held for it, ms (from the slot being taken, on the input's clock). */
  heldMs: number;
}

/**
 * The lapse, when `e` is what readExecInput threw because the input did not come whole in time: the NET_DEADLINE of
 * the stream's own deadline, or the caller's end, or a refusal of its input, after a hold longer than
 * INPUT_HOLD_GRACE_MS (its own code kept).
 */
export function inputLapse(e: unknown): InputLapse | undefined {
  if (!(e instanceof C0Error) || e.detail?.phase !== 'input') return undefined;
  return e.detail as unknown as InputLapse;
}

/** The bytes of input a job's exec carries: its declared size, with the sealed box's overhead when sealed. */
export function declaredInputBytes(job: Job): number {
  return job.input.size + (job.inputSealed === 'yes' ? SEALED_OVERHEAD_BYTES : 0);
}

/**
 * An input that came whole and was then refused (handleExec: not the job's input) after the slot was held `heldMs`:
 * a lapse past the grace, by the same rule as one refused while it came (readExecInput, heldPastGrace). `e` comes back with the detail, its code
 * and message kept.
 */
export function refusedAfterHold(e: unknown, heldMs: number, job: Job): unknown {
  if (!(e instanceof C0Error) || e.code.startsWith('NET_') || inputLapse(e)) return e;
  const expected = declaredInputBytes(job);
  return heldPastGrace(e, { received: expected, short: false }, expected, heldMs);
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
 * lost connection, a short end), or whose frames were refused (a bad chunk, more than declared), more than
 * INPUT_HOLD_GRACE_MS after the slot was taken (`limits.heldSince`, default now: handleExec calls this right after
 * #checkHeader took the slot).
 */
export async function readExecInput(io: ExecIO, header: ExecHeader, job: Opened<Job>, limits: InputLimits): Promise<Uint8Array> {
  const expected = declaredInputBytes(job.record);
  const clock = limits.clock ?? monotonicClock;
  const taken = limits.heldSince ?? clock();
  const progress = { received: 0, short: false };
  // The whole declared size is reserved here, not as it arrives: an input half in must not be refused for the budget
  // another stream took meanwhile. A buyer that stalls holds it no longer than the deadline below lets it. (Outside
  // the lapse: a budget this node has not got is not the buyer's doing.)
  if (!header.input) io.reserve(expected);
  try {
    return await receive(io, header, job, limits, clock, expected, progress);
  } catch (e) {
    // whatever ended it, thrown from one place: the hold is judged however the input failed (review s41 D F1)
    // whole milliseconds: the monotonic clock has fractions, and the log line carries the figure
    throw lapsed(io, e, progress, expected, Math.round(clock() - taken), limits.minInputBytesPerSec);
  }
}

/** readExecInput's reading, `progress` kept up to date for the lapse its caller may make of a failure. */
async function receive(io: ExecIO, header: ExecHeader, job: Opened<Job>, limits: InputLimits, clock: () => number, expected: number, progress: { received: number; short: boolean }): Promise<Uint8Array> {
  if (header.input) {
    progress.received = header.input.length;
    if ((await io.next()) !== undefined) throw new C0Error('EXEC_BAD_REQUEST', 'an inline input is the whole request: nothing may follow the header');
    return header.input;
  }
  const start = clock();
  io.setDeadline(inputDeadlineMs(limits, start, start, 0, expected), 'input');
  await io.send({ t: 'ready' });
  const buf = new Uint8Array(expected);
  for (;;) {
    const v = await io.next();
    if (v === undefined) break;
    const data = parseInputChunk(v);
    if (progress.received + data.length > expected) throw new C0Error('EXEC_INPUT_MISMATCH', `more input than the job's ${job.record.input.size} bytes`);
    buf.set(data, progress.received);
    progress.received += data.length;
    io.setDeadline(inputDeadlineMs(limits, start, clock(), progress.received, expected), 'input');
  }
  if (progress.received !== expected) {
    progress.short = true;
    throw new C0Error('EXEC_INPUT_MISMATCH', `input of ${progress.received} bytes where the job says ${expected}`);
  }
  return buf;
}

/**
 * Whether `received` bytes of input after the slot was held `heldMs` kept up with `minInputBytesPerSec`: what the rate
 * asks of the hold past INPUT_HOLD_GRACE_MS, the chunk being read counted in (a frame refused as it arrives is not in
 * `received` yet). A buyer sending at the minimum rate is, whatever its round trip up to the grace; one that held the
 * slot and sent nothing for more than the grace plus one chunk at the rate (4 s by default) is not.
 */
export function inputOnPace(received: number, heldMs: number, minInputBytesPerSec: number): boolean {
  return received + EXEC_CHUNK_BYTES >= (minInputBytesPerSec * Math.max(0, heldMs - INPUT_HOLD_GRACE_MS)) / 1000;
}

/**
 * What a failed read of the input is thrown as: a lapse when the stream's own deadline ended it, or when the caller
 * ended it (a reset, a lost connection, a short end: the error's own code kept, a NET_STREAM_FAILED when it had none)
 * or what it sent was refused (its code and message kept) after holding the slot `heldMs`, longer than
 * INPUT_HOLD_GRACE_MS; else as it came. The node's own byte budget refusing a chunk (NET_BUFFER_LIMIT: each frame's
 * bytes are taken from it as they arrive, beside the input's reservation, so a budget other streams filled meanwhile
 * can refuse one) is not the buyer's lapse while its input was coming at the minimum rate (inputOnPace); before, an
 * honest upload cut that way paused its buyer (review s41 D round 2 F3). Past that pace it is one: else a buyer could
 * hold the slot, then fill its own peer budget on another stream and end the hold with a refusal it caused.
 */
function lapsed(io: ExecIO, e: unknown, progress: { received: number; short: boolean }, expected: number, heldMs: number, minInputBytesPerSec: number): unknown {
  const { received } = progress;
  const why: unknown = io.signal.aborted ? io.signal.reason : undefined;
  if (why instanceof C0Error && why.code === 'NET_DEADLINE') {
    const detail: InputLapse = { phase: 'input', received, expected, ended: 'deadline', heldMs };
    return new C0Error('NET_DEADLINE', `${why.message}: ${received} of ${expected} bytes of input in`, { detail: { ...detail }, cause: e });
  }
  if (e instanceof C0Error && e.code === 'NET_BUFFER_LIMIT' && inputOnPace(received, heldMs, minInputBytesPerSec)) return e;
  return heldPastGrace(e, progress, expected, heldMs);
}

/**
 * The one rule for a failure after the slot was held `heldMs` (readExecInput's lapse, and refusedAfterHold's refusal of
 * an input that came whole): within INPUT_HOLD_GRACE_MS it is thrown as it came; past it, it is the buyer's lapse: a
 * refusal of what it sent (its code and message kept: what the buyer is told), or a stream it ended, or ended short
 * (its own code, NET_STREAM_FAILED when it had none).
 */
function heldPastGrace(e: unknown, progress: { received: number; short: boolean }, expected: number, heldMs: number): unknown {
  if (heldMs <= INPUT_HOLD_GRACE_MS) return e;
  const { received } = progress;
  // a refusal of the buyer's own frames (its message is what the buyer is told); a stream ended, or ended short, by it
  const refused = e instanceof C0Error && !e.code.startsWith('NET_') && !progress.short;
  const detail: InputLapse = { phase: 'input', received, expected, ended: refused ? 'refused' : 'caller', heldMs };
  const code = e instanceof C0Error ? e.code : 'NET_STREAM_FAILED';
  const message = e instanceof C0Error && !e.code.startsWith('NET_') ? e.message : `${e instanceof Error ? e.message : String(e)}: ${received} of ${expected} bytes of input in, ${heldMs} ms after the slot was taken`;
  return new C0Error(code, message, { ...(e instanceof C0Error && e.field !== undefined ? { field: e.field } : {}), detail: { ...detail }, cause: e });
}
