/** pool/1: entitlements, grades, attribution, estimates, idle, admission, preemption. Pure. */
export * from './grades.js';
export * from './tree.js';
export * from './usage.js';
export * from './claim-set.js';
export * from './admission.js';
export * from './attribution.js';
export * from './estimate.js';
export * from './idle.js';
export * from './preemption.js';
export * from './yaml.js';
