/**
 * `/c0mpute/exec/1` (DESIGN §3.5; docs/network.md "Direct streams: limits and
 * framing"). A streaming protocol, so inputs and outputs up to the documented
 * limits (16 MiB by default) travel in chunks with backpressure:
 *
 *   buyer → provider   {t:'exec', selection, job, offer, admission?} the header
 *   provider → buyer   {t:'ready'} | {t:'refused', code, message}  the records were checked first
 *   buyer → provider   {t:'input', data} × n (≤ 256 KiB each), then [1]
 *   provider → buyer   {t:'accepted'}, {t:'progress'}…, {t:'output', data} × n (≤ 256 KiB each, in order),
 *                      {t:'receipt'} — or {t:'refused'} when the input does not check out
 *
 * A header with `keepalive: 'yes'` asks the provider to show it is there while
 * the work runs: a provider that will answers `{t:'accepted', startedAt,
 * keepaliveMs}` and sends `{t:'keepalive'}` every `keepaliveMs` until the work
 * ends, then `{t:'keepalive', last:'yes'}` once the work has ended, before the
 * output and the receipt; the buyer gives the attempt up after silenceLimitMs
 * without a frame while the work runs (EXEC_PROVIDER_SILENT), well inside a
 * runner-up's offer, instead of waiting 30–45 s for the connection's pings, and
 * stops watching at the last keepalive (the output's transfer is paced by the
 * link, under the deadline and the connection's pings). A provider before it
 * ignores the key and sends no `keepaliveMs` (its silent run is waited for as
 * before); a buyer before it does not ask, and so never meets the frame (its
 * parser refuses kinds it does not know).
 *
 * A buyer that asked for keepalives also acknowledges the receipt: once it read
 * it, it closes its writing side (a FIN after its end frame), and only that
 * tells the provider the receipt arrived (receiptAcknowledged); a reset does
 * not, as a buyer resets a stream it gives up too (its silence watch, its
 * budget, its stop), and the receipt then goes to outcome/1's re-delivery. A
 * buyer before it resets the stream once it read the receipt, and for it that
 * reset still counts. A provider before it has written its end frame after the
 * receipt and takes the FIN as the caller's close.
 *
 * An input of at most EXEC_INLINE_INPUT_BYTES may travel inside the header
 * (`input`, the request format before chunking): then there is no `ready` and
 * no `input` frame. Frames are canonical CBOR maps; records travel as envelopes.
 * On an overlay with a steward the header also carries `admission`: the
 * steward's signed `Admitted` ledger entry for the job's claim (docs/overlays.md
 * "Providers run only admitted work"); a provider before it ignores the key.
 */
import { C0Error } from '../errors.js';
import { raceTimeout } from '../util/timers.js';

export const EXEC_PROTOCOL = '/c0mpute/exec/1';

/** Size of an input or output chunk frame's data. */
export const EXEC_CHUNK_BYTES = 256 * 1024;
/** Largest input sent inside the header (no `ready` round trip). */
export const EXEC_INLINE_INPUT_BYTES = 64 * 1024;
/** What a sealed input adds to the plaintext (ephemeral key, nonce, tag). */
export const SEALED_OVERHEAD_BYTES = 32 + 12 + 16;
/** How often a provider that was asked sends `{t:'keepalive'}` while the work runs. */
export const EXEC_KEEPALIVE_MS = 5_000;
/** A buyer gives an attempt up after this many keepalive intervals without a frame. */
export const EXEC_SILENCE_FACTOR = 3;
/** The keepalive intervals a buyer takes from `accepted` (a provider's other values are clamped into it). */
export const EXEC_KEEPALIVE_MIN_MS = 100;
export const EXEC_KEEPALIVE_MAX_MS = 60_000;

/** How long a buyer waits without a frame from a provider that promised keepalives every `keepaliveMs`. */
export function silenceLimitMs(keepaliveMs: number): number {
  return EXEC_SILENCE_FACTOR * Math.min(EXEC_KEEPALIVE_MAX_MS, Math.max(EXEC_KEEPALIVE_MIN_MS, keepaliveMs));
}

/** The largest `admission` a header may carry (a pool/1 ledger entry is a few hundred bytes). */
export const EXEC_MAX_ADMISSION_BYTES = 4096;
/** The documented default input limit (provider.maxInputBytes); a buyer refuses larger inputs before sending anything. */
export const EXEC_MAX_INPUT_BYTES = 16 * 1024 * 1024;
/** The largest provider.maxInputBytes a node accepts (config): an input is held whole in memory while its job runs. */
export const PROVIDER_MAX_INPUT_BYTES = 1024 * 1024 * 1024;
/** The largest output a buyer takes (assembled from chunks). */
export const EXEC_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

export interface ExecHeader {
  t: 'exec';
  selection: Uint8Array;
  job: Uint8Array;
  offer: Uint8Array;
  /** The whole input (raw or sealed to the provider's box key), when at most EXEC_INLINE_INPUT_BYTES. */
  input?: Uint8Array;
  /** On an overlay with a steward: its signed `Admitted` entry (pool/1 envelope) for the job's claim (its own, or its gang's). */
  admission?: Uint8Array;
  /** 'yes': the buyer takes `{t:'keepalive'}` frames while the work runs (the provider says how often in `accepted`); a text enum, as canonical CBOR has no booleans. */
  keepalive?: 'yes' | 'no';
}

/** What a buyer asks to run: the header's records and the whole input (chunked on the wire). */
export interface ExecRequest {
  t: 'exec';
  selection: Uint8Array;
  job: Uint8Array;
  offer: Uint8Array;
  /** The input, raw or sealed to the provider's box key (job.inputSealed). */
  input: Uint8Array;
  /** The steward's `Admitted` entry for the job's claim (ExecHeader.admission). */
  admission?: Uint8Array;
  /** Ask for keepalives (ExecHeader.keepalive). */
  keepalive?: boolean;
}

export type ExecFrame =
  | { t: 'ready' }
  | { t: 'accepted'; startedAt: number; keepaliveMs?: number }
  | { t: 'progress'; message: string; permille?: number }
  /** `last: 'yes'`: the work has ended; no keepalive follows, the output and the receipt do. */
  | { t: 'keepalive'; last?: 'yes' }
  | { t: 'output'; data: Uint8Array }
  | { t: 'receipt'; receipt: Uint8Array }
  | { t: 'refused'; code: string; message: string };

function isBytes(v: unknown): v is Uint8Array {
  return v instanceof Uint8Array;
}

export function parseExecHeader(v: unknown): ExecHeader {
  const o = v as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || o.t !== 'exec') throw new C0Error('EXEC_BAD_REQUEST', 'not an exec request frame');
  for (const k of ['selection', 'job', 'offer'] as const) {
    if (!isBytes(o[k])) throw new C0Error('EXEC_BAD_REQUEST', `exec request: ${k} must be bytes`, { field: k });
  }
  if (o.input !== undefined && (!isBytes(o.input) || o.input.length > EXEC_INLINE_INPUT_BYTES + SEALED_OVERHEAD_BYTES)) {
    throw new C0Error('EXEC_BAD_REQUEST', `exec request: an inline input must be bytes, at most ${EXEC_INLINE_INPUT_BYTES} (send larger ones in input frames)`, { field: 'input' });
  }
  if (o.admission !== undefined && (!isBytes(o.admission) || o.admission.length > EXEC_MAX_ADMISSION_BYTES)) {
    throw new C0Error('EXEC_BAD_REQUEST', `exec request: admission must be bytes, at most ${EXEC_MAX_ADMISSION_BYTES}`, { field: 'admission' });
  }
  if (o.keepalive !== undefined && o.keepalive !== 'yes' && o.keepalive !== 'no') throw new C0Error('EXEC_BAD_REQUEST', "exec request: keepalive must be 'yes' or 'no'", { field: 'keepalive' });
  return o as unknown as ExecHeader;
}

/** An input chunk frame's data. */
export function parseInputChunk(v: unknown): Uint8Array {
  const o = v as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || o.t !== 'input' || !isBytes(o.data) || o.data.length > EXEC_CHUNK_BYTES) {
    throw new C0Error('EXEC_BAD_REQUEST', `expected an input frame {t:'input', data} of at most ${EXEC_CHUNK_BYTES} bytes`, { field: 'input' });
  }
  return o.data;
}

/** Exec refusals that only an invalid request earns (execRequestInvalid). */
const INVALID_EXEC_CODES: ReadonlySet<string> = new Set(['EXEC_BAD_REQUEST', 'EXEC_NOT_MY_OFFER', 'EXEC_OFFER_MISMATCH', 'EXEC_NOT_SELECTED', 'EXEC_SELECTION_UNAUTHORISED', 'EXEC_INPUT_MISMATCH']);

/**
 * Whether an exec/1 refusal says the request itself was invalid: a malformed frame or record (`CBOR_*`,
 * `ENVELOPE_*`, `RECORD_*` but a record's time, `DID_*`, a sealed input that does not open `BOX_*`), records that do
 * not belong together or a selection its signer could not make, an input other than the job's. No honest buyer sends
 * these; the provider charges the sender's abuse score for them (docs/network.md §10). What an honest buyer meets
 * (busy, a lapsed offer, a passed deadline, already run, preempted, not admitted) is not.
 */
export function execRequestInvalid(code: string): boolean {
  if (INVALID_EXEC_CODES.has(code)) return true;
  if (code === 'RECORD_EXPIRED' || code === 'RECORD_FROM_FUTURE') return false;
  return /^(CBOR|ENVELOPE|RECORD|DID|BOX)_/.test(code);
}

/** What a refusal code may be: the pattern of a receipt's failure code (docs/protocol.md §3). */
const REFUSAL_CODE_RE = /^[A-Z][A-Z0-9_]{0,63}$/;

export function parseExecFrame(v: unknown): ExecFrame {
  const o = v as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || typeof o.t !== 'string') throw new C0Error('EXEC_BAD_FRAME', 'not an exec frame');
  switch (o.t) {
    case 'ready':
      return { t: 'ready' };
    case 'accepted':
      if (typeof o.startedAt === 'number') {
        // a keepalive interval that is not a positive number is no promise: the run is waited for as a silent one
        const k = o.keepaliveMs;
        return { t: 'accepted', startedAt: o.startedAt, ...(typeof k === 'number' && Number.isFinite(k) && k > 0 ? { keepaliveMs: k } : {}) };
      }
      break;
    case 'keepalive':
      return o.last === 'yes' ? { t: 'keepalive', last: 'yes' } : { t: 'keepalive' };
    case 'progress':
      if (typeof o.message === 'string' && (o.permille === undefined || typeof o.permille === 'number')) return o as unknown as ExecFrame;
      break;
    case 'output':
      if (isBytes(o.data)) return o as unknown as ExecFrame;
      break;
    case 'receipt':
      if (isBytes(o.receipt)) return o as unknown as ExecFrame;
      break;
    case 'refused':
      if (typeof o.code === 'string' && typeof o.message === 'string') {
        // A refusal code is a stable code like a receipt's failure code; anything else (a provider's free text, which
        // would end up in the buyer's non-delivery) is still a refusal, under EXEC_BAD_REFUSAL.
        if (REFUSAL_CODE_RE.test(o.code)) return o as unknown as ExecFrame;
        return { t: 'refused', code: 'EXEC_BAD_REFUSAL', message: 'the provider refused with a malformed code' };
      }
      break;
  }
  throw new C0Error('EXEC_BAD_FRAME', `malformed exec frame "${String(o.t).slice(0, 20)}"`);
}

/** How the buyer left the exec stream after the receipt was written (ExecIO.callerEnded), or that it never did. */
export type ReceiptAck = 'closed' | 'reset' | 'lost' | 'silent' | 'unknown';

/**
 * Whether the way the buyer left the stream after the receipt shows it got the receipt. A buyer that asked for
 * keepalives (`keepalive: 'yes'`) acknowledges explicitly by closing its writing side, and only that counts: its
 * reset may come from giving up before the receipt reached it (its silence watch, its budget, its stop). A buyer
 * before it never closes its side, and resets the stream once it read the receipt: for it a reset counts too.
 */
export function receiptAcknowledged(how: ReceiptAck, keepalive: boolean): boolean {
  return how === 'closed' || (how === 'reset' && !keepalive);
}

/** How long a buyer waits for its acknowledgement (the FIN) to be handed to the connection before it closes anyway. */
export const EXEC_ACK_WAIT_MS = 5_000;

/** Split `data` into chunks of at most `size` bytes (views, no copies). */
export function chunks(data: Uint8Array, size = EXEC_CHUNK_BYTES): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let off = 0; off < data.length; off += size) out.push(data.subarray(off, Math.min(off + size, data.length)));
  return out;
}

/** The caller's side of a streaming direct protocol, as the exchange needs it. */
export interface ExecChannel {
  send(frame: never): Promise<void>;
  end(): Promise<void>;
  next(): Promise<unknown>;
  /** Close the writing side (ClientStream.closeWrite): the receipt's acknowledgement. */
  closeWrite(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The buyer's side of one exchange: send the header, wait for `ready`, stream
 * the input, then yield the provider's frames. Output chunks are assembled
 * and yielded as one `output` frame before the receipt (bounded by
 * `maxOutputBytes`: EXEC_OUTPUT_TOO_LARGE); `heard` is told of the answer to
 * the header (`ready`) and of each frame after the input as it arrives, each
 * output chunk too. Closes the channel in every
 * case; a request that asked for keepalives first acknowledges a receipt it
 * handed on (closeWrite, at most EXEC_ACK_WAIT_MS), and nothing else.
 */
export async function* execExchange(ch: ExecChannel, req: ExecRequest, maxOutputBytes = EXEC_MAX_OUTPUT_BYTES, heard?: (f: ExecFrame) => void): AsyncGenerator<unknown> {
  let gotReceipt = false;
  try {
    const header: ExecHeader = { t: 'exec', selection: req.selection, job: req.job, offer: req.offer, ...(req.admission ? { admission: req.admission } : {}), ...(req.keepalive ? { keepalive: 'yes' as const } : {}) };
    if (req.input.length <= EXEC_INLINE_INPUT_BYTES) {
      await ch.send({ ...header, input: req.input } as never);
      await ch.end();
    } else {
      await ch.send(header as never);
      const first = await ch.next();
      if (first === undefined) return;
      const f = parseExecFrame(first);
      // the provider took the request (or refused it): the buyer's watch on the stream's opening ends here
      heard?.(f);
      if (f.t !== 'ready') {
        yield first;
        return;
      }
      for (const c of chunks(req.input)) await ch.send({ t: 'input', data: c } as never);
      await ch.end();
    }
    const parts: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const raw = await ch.next();
      if (raw === undefined) break;
      const f = parseExecFrame(raw);
      heard?.(f);
      if (f.t === 'output') {
        size += f.data.length;
        if (size > maxOutputBytes) throw new C0Error('EXEC_OUTPUT_TOO_LARGE', `the provider sent more than ${maxOutputBytes} bytes of output`);
        parts.push(f.data);
        continue;
      }
      if (f.t === 'receipt' && parts.length) yield { t: 'output', data: parts.length === 1 ? parts[0]! : concat(parts, size) };
      if (f.t === 'receipt') gotReceipt = true;
      yield raw;
    }
  } finally {
    if (gotReceipt && req.keepalive) await acknowledge(ch);
    await ch.close();
  }
}

/** Close the writing side, at most EXEC_ACK_WAIT_MS (the close that follows ends what is left of it). */
async function acknowledge(ch: ExecChannel): Promise<void> {
  await raceTimeout(ch.closeWrite().catch(() => {}), EXEC_ACK_WAIT_MS, undefined);
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
