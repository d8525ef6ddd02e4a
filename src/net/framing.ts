/**
 * Gossip message framing (docs/network.md §2).
 *
 * A message is either
 *  - one COSE_Sign1 envelope (its first byte is 0xd2, CBOR tag 18), or
 *  - a canonical CBOR array of 2..1+MAX_ATTACHMENTS byte strings, each an
 *    envelope: `[primary, attachment…]` (an offer with the advert it cites).
 *
 * The message id is SHA-256 of the message bytes, so a single-envelope message's
 * id is the record's content address.
 */
import { C0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical } from '../records/cbor.js';
import { MAX_ATTACHMENTS } from './topics.js';

export const FRAME_ERR = { MALFORMED: 'MESSAGE_MALFORMED' } as const;

export interface Framed {
  primary: Uint8Array;
  attachments: Uint8Array[];
}

export function encodeMessage(primary: Uint8Array, attachments: readonly Uint8Array[] = []): Uint8Array {
  if (attachments.length === 0) return primary;
  if (attachments.length > MAX_ATTACHMENTS) throw new C0Error('MESSAGE_TOO_MANY_ATTACHMENTS', `at most ${MAX_ATTACHMENTS} attachment(s) per message`);
  return encodeCanonical([primary, ...attachments]);
}

export function decodeMessage(data: Uint8Array): Framed {
  const first = data[0];
  if (first === 0xd2) return { primary: data, attachments: [] };
  if (first === undefined || first >> 5 !== 4) throw new C0Error(FRAME_ERR.MALFORMED, 'message is neither an envelope nor an array of envelopes');
  let v: unknown;
  try {
    v = decodeCanonical(data);
  } catch (e) {
    throw new C0Error(FRAME_ERR.MALFORMED, `message framing is not canonical CBOR: ${(e as Error).message}`);
  }
  if (!Array.isArray(v) || v.length < 2 || v.length > 1 + MAX_ATTACHMENTS || !v.every((x) => x instanceof Uint8Array)) {
    throw new C0Error(FRAME_ERR.MALFORMED, `a framed message is an array of 2..${1 + MAX_ATTACHMENTS} byte strings`);
  }
  const [primary, ...attachments] = v as Uint8Array[];
  return { primary: primary!, attachments };
}
