/** The network layer: see docs/network.md. */
export * from './topics.js';
export * from './framing.js';
export * from './gossip-validation.js';
export * from './dispatch.js';
export * from './record-cache.js';
export * from './metrics.js';
export * from './protocols.js';
export * from './records-protocol.js';
export * from './node.js';
