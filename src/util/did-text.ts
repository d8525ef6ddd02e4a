/**
 * A DID as a person reads it, in the console and the CLI (docs/console.md
 * "Text from other nodes"). Pure text functions (no key check, no
 * crypto), so the console's bundle and the CLI's light commands both load
 * them.
 *
 * An Ed25519 did:key is `did:key:z6Mk` and 44 base58btc characters: the
 * `z6Mk` is the same for every key (multibase and multicodec), so the short
 * form skips it and shows 8 characters after it and the last 4, about 69
 * bits of the key (the first of the 8 carries ~4 bits, the others ~5.9
 * each). It showed `z6MkvD…5T3Z`, 6 key characters (~35 bits): a look-alike
 * of any provider's short form was a vanity-key search of hours on one core
 * (review s43 R3 F4). Where the short form is drawn, the full DID is in a
 * title.
 */
import { printable } from './text.js';

/** An Ed25519 did:key as the project makes them (src/records/did.ts): the syntax only, not the key check. */
export const ED25519_DID_RE = /^did:key:z6Mk[1-9A-HJ-NP-Za-km-z]{44}$/;

/** Is `s` an Ed25519 did:key by its syntax (what the console may draw as a DID)? */
export function looksLikeDid(s: unknown): s is string {
  return typeof s === 'string' && ED25519_DID_RE.test(s);
}

/** Longest text `shortDid` shows of something that is not a DID (then `…`). */
const OTHER_MAX = 24;

/**
 * The short form of a DID: `vDqX3a9b…5T3Z` (8 key characters after `z6Mk`,
 * then the last 4). Anything else (a malformed or foreign DID, a peer's text
 * that merely starts with `did:key:`) is shown as text, at most 24 code
 * points, with control and bidirectional characters escaped (`printable`):
 * never as a short form that could read as a real DID's.
 */
export function shortDid(did: string): string {
  if (looksLikeDid(did)) return `${did.slice(12, 20)}…${did.slice(-4)}`;
  const cps = Array.from(did);
  return printable(cps.length > OTHER_MAX ? `${cps.slice(0, OTHER_MAX).join('')}…` : did);
}
