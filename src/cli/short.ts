/** DIDs and addresses shortened for the terminal (light: no rendering, no market). */
import { shortDid } from '../util/did-text.js';

/** A DID as the console shortens it (src/util/did-text.ts: 8 + 4 key characters after `z6Mk`; other text escaped, cut at 24). */
export function short(did: string | undefined): string {
  if (!did) return '?';
  return shortDid(did);
}
export function shortAddr(a: string | undefined): string {
  return a ? `${a.slice(0, 15)}…` : '?';
}
