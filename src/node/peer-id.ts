/**
 * DID ↔ libp2p PeerId. The node's libp2p key is its identity key, so a PeerId
 * derives from a DID and back (an Ed25519 PeerId is an identity multihash of
 * the protobuf public key).
 */
import { privateKeyFromRaw, publicKeyFromRaw } from '@libp2p/crypto/keys';
import { peerIdFromPublicKey, peerIdFromString } from '@libp2p/peer-id';
import type { Ed25519PrivateKey, PeerId } from '@libp2p/interface';
import { C0Error } from '../errors.js';
import { didFromPublicKey, parseDid } from '../records/did.js';
import type { Ed25519Signer } from '../records/ed25519.js';

export function peerIdFromDid(did: string): PeerId {
  const { publicKey } = parseDid(did);
  return peerIdFromPublicKey(publicKeyFromRaw(publicKey));
}

export function didFromPeerId(peer: PeerId | string): string {
  let p: PeerId;
  try {
    p = typeof peer === 'string' ? peerIdFromString(peer) : peer;
  } catch (e) {
    throw new C0Error('PEER_ID_MALFORMED', `not a PeerId: ${String(peer).slice(0, 80)} (${(e as Error).message})`);
  }
  if (p.type !== 'Ed25519' || !p.publicKey) throw new C0Error('PEER_ID_NOT_ED25519', `PeerId ${p.toString()} is not an Ed25519 identity`);
  const did = didFromPublicKey(p.publicKey.raw);
  parseDid(did); // the strict key check
  return did;
}

/**
 * The libp2p private key for the node's identity (same seed, same key). Built from the seed and the signer's public
 * key (derived by node:crypto when the signer was made): libp2p's `generateKeyPairFromSeed` derives the public key
 * again in pure JS (@noble/curves), whose first use builds its tables, ~60 ms of CPU at every start.
 */
export async function libp2pKey(signer: Ed25519Signer): Promise<Ed25519PrivateKey> {
  const raw = new Uint8Array(64);
  const seed = signer.exportSeed();
  try {
    raw.set(seed, 0);
    raw.set(signer.publicKey, 32);
    return privateKeyFromRaw(raw) as Ed25519PrivateKey; // copies the bytes
  } finally {
    seed.fill(0);
    raw.fill(0);
  }
}

/**
 * Call `fn` with the DID of each Ed25519 peer that connects to `p2p` (libp2p's `peer:connect`; other peers are no
 * node's key and are skipped). Returns what stops it.
 */
export function onDidConnect(p2p: Pick<EventTarget, 'addEventListener' | 'removeEventListener'>, fn: (did: string) => void): () => void {
  const onConnect = (evt: Event): void => {
    let did: string;
    try {
      did = didFromPeerId((evt as CustomEvent<{ toString(): string }>).detail.toString());
    } catch {
      return;
    }
    fn(did);
  };
  p2p.addEventListener('peer:connect', onConnect);
  return () => p2p.removeEventListener('peer:connect', onConnect);
}
