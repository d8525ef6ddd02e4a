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
import type { Opened } from '../../records/envelope.js';
import type { Job } from '../../records/kinds.js';
import { parseInputChunk, SEALED_OVERHEAD_BYTES, type ExecFrame, type ExecHeader } from '../exec-protocol.js';

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
}

/** Margin after the job's timeout to deliver output and receipt. */
export const RUN_MARGIN_MS = 60_000;

export function runPhaseMs(job: Job, now: number): number {
  return Math.max(1, Math.min(job.timeoutMs, job.deadline - now)) + RUN_MARGIN_MS;
}

/** Read the input: inline in the header, or `ready` then chunks up to the declared size and the caller's end. */
export async function readExecInput(io: ExecIO, header: ExecHeader, job: Opened<Job>, limits: InputLimits): Promise<Uint8Array> {
  const expected = job.record.input.size + (job.record.inputSealed === 'yes' ? SEALED_OVERHEAD_BYTES : 0);
  if (header.input) {
    if ((await io.next()) !== undefined) throw new C0Error('EXEC_BAD_REQUEST', 'an inline input is the whole request: nothing may follow the header');
    return header.input;
  }
  io.reserve(expected);
  io.setDeadline(limits.requestMs + Math.ceil((expected / limits.minInputBytesPerSec) * 1000), 'input');
  await io.send({ t: 'ready' });
  const buf = new Uint8Array(expected);
  let off = 0;
  for (;;) {
    const v = await io.next();
    if (v === undefined) break;
    const data = parseInputChunk(v);
    if (off + data.length > expected) throw new C0Error('EXEC_INPUT_MISMATCH', `more input than the job's ${job.record.input.size} bytes`);
    buf.set(data, off);
    off += data.length;
  }
  if (off !== expected) throw new C0Error('EXEC_INPUT_MISMATCH', `input of ${off} bytes where the job says ${expected}`);
  return buf;
}
