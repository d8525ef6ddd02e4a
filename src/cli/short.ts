/** DIDs and addresses shortened for the terminal (light: no rendering, no market). */
export function short(did: string | undefined): string {
  if (!did) return '?';
  return did.startsWith('did:key:') ? `${did.slice(8, 16)}…${did.slice(-4)}` : did.length > 20 ? `${did.slice(0, 14)}…` : did;
}
export function shortAddr(a: string | undefined): string {
  return a ? `${a.slice(0, 15)}…` : '?';
}
