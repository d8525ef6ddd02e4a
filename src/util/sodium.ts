/**
 * libsodium through `sodium-native` (a native addon with prebuilt binaries),
 * loaded once for the process: signatures and key checks (records/ed25519.ts)
 * and Noise's AEAD and X25519 (net/noise-crypto.ts). Undefined where the addon has no
 * binary for the platform; each user then keeps its fallback.
 */
import { createRequire } from 'node:module';

/** The parts of sodium-native this project uses (the addon ships no type declarations). */
export interface Sodium {
  crypto_sign_verify_detached(sig: Uint8Array, msg: Uint8Array, pub: Uint8Array): boolean;
  crypto_core_ed25519_is_valid_point(p: Uint8Array): boolean;
  /** Writes ciphertext ‖ tag into c (m.length + 16 bytes); throws on bad lengths. */
  crypto_aead_chacha20poly1305_ietf_encrypt(c: Uint8Array, m: Uint8Array, ad: Uint8Array | null, nsec: null, npub: Uint8Array, k: Uint8Array): number;
  /** Writes the plaintext into m (c.length − 16 bytes); throws "could not verify data" when the tag does not match. */
  crypto_aead_chacha20poly1305_ietf_decrypt(m: Uint8Array, nsec: null, c: Uint8Array, ad: Uint8Array | null, npub: Uint8Array, k: Uint8Array): number;
  randombytes_buf(buf: Uint8Array): void;
  /** X25519: q = n × base point (32 bytes each). */
  crypto_scalarmult_base(q: Uint8Array, n: Uint8Array): void;
  /** X25519: q = n × p; throws when the result is all zeros (p of small order). */
  crypto_scalarmult(q: Uint8Array, n: Uint8Array, p: Uint8Array): void;
}

export const sodium: Sodium | undefined = (() => {
  try {
    return createRequire(import.meta.url)('sodium-native') as Sodium;
  } catch {
    return undefined;
  }
})();
