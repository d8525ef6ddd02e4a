/**
 * Whether a text is an address libp2p can use, checked where it is read (a config, a run file, a flag) so a bad one is
 * refused naming where it came from, not when the node listens or dials (`String multiaddr must start with "/"`).
 */
import { multiaddr } from '@multiformats/multiaddr';
import { peerIdFromString } from '@libp2p/peer-id';

/** A multiaddr libp2p can parse. */
export function isMultiaddr(s: string): boolean {
  try {
    multiaddr(s);
    return true;
  } catch {
    return false;
  }
}

/** A multiaddr whose `/p2p/<PeerId>`, when it has one, parses. */
export function isPeerAddr(s: string): boolean {
  try {
    const id = multiaddr(s).getComponents().findLast((c) => c.name === 'p2p')?.value;
    if (id !== undefined) peerIdFromString(id);
    return true;
  } catch {
    return false;
  }
}

/** The peer id a multiaddr ends with (`/p2p/<PeerId>`, parsed), or undefined when it names none or is no multiaddr. */
export function peerIdOfAddr(s: string): string | undefined {
  try {
    const id = multiaddr(s).getComponents().findLast((c) => c.name === 'p2p')?.value;
    return id === undefined ? undefined : peerIdFromString(id).toString();
  } catch {
    return undefined;
  }
}
