/**
 * `/c0mpute/exec/1`: the buyer sends one request frame; the provider answers
 * with a stream of frames: `accepted`, any number of `progress`, then either
 * `output` + `receipt` (completed) or `receipt` alone (failed), or a single
 * `refused` when it will not run the request at all (nothing ran, so there is
 * no receipt). Frames are canonical CBOR maps; records travel as envelopes.
 */
import { C0Error } from '../errors.js';

export const EXEC_PROTOCOL = '/c0mpute/exec/1';

export interface ExecRequest {
  t: 'exec';
  selection: Uint8Array;
  job: Uint8Array;
  offer: Uint8Array;
  /** The input, raw or sealed to the provider's box key (job.inputSealed). */
  input: Uint8Array;
}

export type ExecFrame =
  | { t: 'accepted'; startedAt: number }
  | { t: 'progress'; message: string; permille?: number }
  | { t: 'output'; data: Uint8Array }
  | { t: 'receipt'; receipt: Uint8Array }
  | { t: 'refused'; code: string; message: string };

function isBytes(v: unknown): v is Uint8Array {
  return v instanceof Uint8Array;
}

export function parseExecRequest(v: unknown): ExecRequest {
  const o = v as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || o.t !== 'exec') throw new C0Error('EXEC_BAD_REQUEST', 'not an exec request frame');
  for (const k of ['selection', 'job', 'offer', 'input'] as const) {
    if (!isBytes(o[k])) throw new C0Error('EXEC_BAD_REQUEST', `exec request: ${k} must be bytes`, { field: k });
  }
  return o as unknown as ExecRequest;
}

export function parseExecFrame(v: unknown): ExecFrame {
  const o = v as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || typeof o.t !== 'string') throw new C0Error('EXEC_BAD_FRAME', 'not an exec frame');
  switch (o.t) {
    case 'accepted':
      if (typeof o.startedAt === 'number') return o as unknown as ExecFrame;
      break;
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
      if (typeof o.code === 'string' && typeof o.message === 'string') return o as unknown as ExecFrame;
      break;
  }
  throw new C0Error('EXEC_BAD_FRAME', `malformed exec frame "${String(o.t).slice(0, 20)}"`);
}
