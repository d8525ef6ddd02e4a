/**
 * The record kinds every CLI command knows: records/envelope.ts's own and the
 * pool/1 ledger's (src/ledger/entry.ts registers pool/1 and pool-witness/1 when
 * it loads, src/ledger/evidence.ts pool-evidence/1: what `witness evidence
 * --out` writes for `record verify` to check). A command
 * that opens or seals a record of any kind takes the envelope functions from
 * here, so it knows the same kinds whichever other modules it happens to load.
 * Heavy (the envelope code); commands load it when they run.
 */
import '../ledger/entry.js';
import '../ledger/evidence.js';

export { inspect, kindOf, knownTypes, open, openAny, seal } from '../records/envelope.js';
