/** The trust core: canonical CBOR, envelopes, DIDs, record kinds. Pure. */
export * from './cbor.js';
export * from './address.js';
export * from './did.js';
export * from './ed25519.js';
export * from './money.js';
export * from './schema.js';
export * from './kinds.js';
export * from './envelope.js';
export * from './freshness.js';
