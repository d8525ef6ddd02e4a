/**
 * A DID shortened for a table or a sentence (its own module: the CLI prints it without loading the market): the one
 * short form the CLI and the console share, `rupSqGVQ…xemA` (src/util/did-text.ts, docs/console.md). It was
 * `did:key:z6Mkru…C8xemA` here (6 key characters), so the decision's "why" on a job's page named the winner in
 * another form than the rest of the page (QA, session 49). Human text only: no signed record holds it.
 */
export { shortDid } from '../util/did-text.js';
