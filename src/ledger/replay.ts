/**
 * Replay (pool/1 §6.1, §6.4–§6.6): verify the whole chain, then derive usage.
 *
 * Pass 1 checks every entry, in order: the envelope opens as `pool/1` (size,
 * header, signature under the signer's key, canonical core, shape), the signer
 * is the ledger's steward (authenticity), `seq` is its position and `prev` the
 * address of the entry before it (sequence). Pass 2 derives usage, refusing an
 * inconsistent event at its index. A problem is reported with the index of the
 * first bad entry; a broken ledger yields no usage at all, never a shorter
 * history.
 */
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { C0Error } from '../errors.js';
import { open } from '../records/envelope.js';
import { UsageBook, type PoolEvent } from '../pool/usage.js';
import { GENESIS, POOL_TYPE, eventOf, type LedgerEntry } from './entry.js';
import type { ChunkRequest, ChunkResult } from './replay-worker.js';

export const REPLAY_ERR = {
  WRONG_STEWARD: 'LEDGER_WRONG_STEWARD',
  SEQ: 'LEDGER_SEQ_MISMATCH',
  BROKEN_LINK: 'LEDGER_BROKEN_LINK',
} as const;

export type ProblemKind = 'authenticity' | 'canonicity' | 'malformed' | 'sequence' | 'consistency';

export interface ReplayProblem {
  index: number;
  kind: ProblemKind;
  code: string;
  message: string;
}

export interface ReplayResult {
  ok: boolean;
  /** entries presented */
  length: number;
  /** the steward (expected, or the signer of entry 0) */
  steward?: string;
  /** address of the last entry (GENESIS for an empty ledger); only meaningful when ok */
  head: string;
  /** content address of every entry that passed pass 1, by seq */
  addresses: string[];
  /** derived usage: present only when the whole ledger verified */
  book?: UsageBook;
  /** the decoded entries, when ok */
  records?: LedgerEntry[];
  problem?: ReplayProblem;
}

function kindOfCode(code: string): ProblemKind {
  if (code.startsWith('CBOR_')) return 'canonicity';
  if (code === 'ENVELOPE_BAD_SIGNATURE' || code === 'ENVELOPE_BAD_SIGNER' || code === REPLAY_ERR.WRONG_STEWARD || code === 'LEDGER_ENTRY_SIGNER_NOT_STEWARD') return 'authenticity';
  return 'malformed';
}

export interface ReplayOptions {
  /** the steward this ledger must belong to (default: the signer of entry 0) */
  steward?: string;
}

/** What opening one entry yielded: the record, or the refusal. */
type Opened1 = { record: LedgerEntry; signer: string; address: string } | { error: { code: string; message: string } };

function openOne(b: Uint8Array): Opened1 {
  try {
    const o = open(b, POOL_TYPE);
    return { record: o.record as LedgerEntry, signer: o.signer, address: o.address };
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    return { error: { code: e.code, message: e.message } };
  }
}

export function replay(entries: readonly Uint8Array[], opts: ReplayOptions = {}): ReplayResult {
  return replayOpened(entries.length, (i) => openOne(entries[i]!), opts);
}

function replayOpened(n: number, opened: (i: number) => Opened1, opts: ReplayOptions): ReplayResult {
  const entries = { length: n };
  let steward = opts.steward;
  const addresses: string[] = [];
  const records: LedgerEntry[] = [];
  const fail = (index: number, code: string, message: string, kind: ProblemKind = kindOfCode(code)): ReplayResult => ({
    ok: false,
    length: entries.length,
    ...(steward === undefined ? {} : { steward }),
    head: addresses.length ? addresses[addresses.length - 1]! : GENESIS,
    addresses,
    problem: { index, kind, code, message },
  });
  // Pass 1: authenticity and sequence of every entry.
  let prev = GENESIS;
  for (let i = 0; i < entries.length; i++) {
    const o = opened(i);
    if ('error' in o) return fail(i, o.error.code, o.error.message);
    const { record: rec, signer, address } = o;
    if (steward === undefined) steward = signer;
    if (signer !== steward) return fail(i, REPLAY_ERR.WRONG_STEWARD, `entry ${i} is sealed by ${signer}, not by the steward ${steward}`);
    if (rec.seq !== i) return fail(i, REPLAY_ERR.SEQ, `entry ${i} carries seq ${rec.seq}`, 'sequence');
    if (rec.prev !== prev) return fail(i, REPLAY_ERR.BROKEN_LINK, `entry ${i}: prev ${rec.prev} is not the address of entry ${i - 1} (${prev})`, 'sequence');
    prev = address;
    addresses.push(address);
    records.push(rec);
  }
  // Pass 2: derive usage; an inconsistent event is refused at its index.
  const book = new UsageBook();
  for (let i = 0; i < records.length; i++) {
    const ev: PoolEvent = eventOf(records[i]!);
    try {
      book.apply(ev);
    } catch (e) {
      if (!(e instanceof C0Error)) throw e;
      return fail(i, e.code, `entry ${i}: ${e.message}`, 'consistency');
    }
  }
  return { ok: true, length: entries.length, ...(steward === undefined ? {} : { steward }), head: prev, addresses, book, records };
}

/** Replay and throw LEDGER_CORRUPT (detail: the problem) when the ledger does not verify. */
export function replayOrThrow(entries: readonly Uint8Array[], opts: ReplayOptions = {}): ReplayResult & { book: UsageBook } {
  const r = replay(entries, opts);
  if (!r.ok) {
    const p = r.problem!;
    throw new C0Error('LEDGER_CORRUPT', `ledger refused at entry ${p.index}: ${p.code}: ${p.message}`, { detail: { ...p } });
  }
  return r as ReplayResult & { book: UsageBook };
}

/**
 * The same replay, with the signature and canonical checks of pass 1 spread
 * over worker threads (each entry is still opened by the one envelope code);
 * sequence, authenticity against the steward and usage stay on this thread, in
 * order, so the result (including the first problem's index) is identical to
 * replay(). Small ledgers, or `workers` ≤ 1, run inline.
 */
export async function replayParallel(entries: readonly Uint8Array[], opts: ReplayOptions & { workers?: number; minEntries?: number } = {}): Promise<ReplayResult> {
  const workers = Math.max(1, Math.min(opts.workers ?? availableParallelism(), 16));
  if (workers <= 1 || entries.length < (opts.minEntries ?? 4000)) return replay(entries, opts);
  return replayOpened(entries.length, await openInWorkers(entries, workers), opts);
}

/** An entry refused by the envelope checks: its index, the refusal's code and message. */
export interface EntryRefusal {
  index: number;
  code: string;
  message: string;
}

/**
 * Pass 1's envelope checks alone (signature under the signer's key, canonical
 * core, shape; the signer and the chain are the caller's), for a caller that
 * must keep its event loop free while a long run is checked (the witness,
 * src/ledger/witness.ts): from `minEntries` entries on (default 4,000) in
 * `workers` worker threads (default: the cores, at most 16; at least one, so
 * the work is off this thread even on one core), below it here, yielding to
 * the event loop every `yieldEvery` entries (default 250). Returns the first
 * entry that does not open, or undefined when every one does.
 */
export async function firstRefusedEntry(entries: readonly Uint8Array[], opts: { workers?: number; minEntries?: number; yieldEvery?: number } = {}): Promise<EntryRefusal | undefined> {
  if (entries.length >= (opts.minEntries ?? 4000)) {
    const workers = Math.max(1, Math.min(opts.workers ?? availableParallelism(), 16));
    // small chunks, and nothing sent back but a refusal: what this thread receives costs it next to nothing
    // (the chunks past the first refused one may be left unchecked: every chunk before it was handed out first)
    const results = await inWorkers(entries, workers, VERIFY_CHUNK, true);
    return results.find((r) => r?.failure)?.failure;
  }
  const every = Math.max(1, opts.yieldEvery ?? 250);
  for (let i = 0; i < entries.length; i++) {
    if (i > 0 && i % every === 0) await yieldToLoop();
    const o = openOne(entries[i]!);
    if ('error' in o) return { index: i, ...o.error };
  }
  return undefined;
}

/** Entries per chunk firstRefusedEntry sends a worker. */
const VERIFY_CHUNK = 500;

/**
 * Open every entry in `workers` worker threads (replay-worker.ts), in chunks; returns what opening entry i yielded.
 * Past a chunk's first refused entry nothing of that chunk is opened: ask only up to the first refusal.
 */
async function openInWorkers(entries: readonly Uint8Array[], workers: number): Promise<(i: number) => Opened1> {
  const chunk = Math.max(1, Math.ceil(entries.length / (workers * 4)));
  const results = await inWorkers(entries, workers, chunk, false);
  return (i) => {
    const j = Math.floor(i / chunk);
    const r = results[j]!;
    const k = i - j * chunk;
    if (k < r.addresses.length) return { record: r.records[k] as LedgerEntry, signer: r.signers[k]!, address: r.addresses[k]! };
    return { error: { code: r.failure!.code, message: r.failure!.message } };
  };
}

/**
 * The worker pool: every chunk of `chunk` entries opened in one of `workers` threads; the results in chunk order.
 * `verifyOnly`: only refusals come back, and the chunks after the first refused one handed out are not (undefined).
 */
async function inWorkers(entries: readonly Uint8Array[], workers: number, chunk: number, verifyOnly: boolean): Promise<ChunkResult[]> {
  const jobs: Array<{ start: number; entries: Uint8Array[] }> = [];
  for (let s = 0; s < entries.length; s += chunk) jobs.push({ start: s, entries: entries.slice(s, s + chunk) as Uint8Array[] });
  const results = new Array<ChunkResult>(jobs.length);
  const pool = Array.from({ length: Math.min(workers, jobs.length) }, () => new Worker(new URL('./replay-worker.js', import.meta.url)));
  try {
    let next = 0;
    await Promise.all(
      pool.map(
        (w) =>
          new Promise<void>((resolve, reject) => {
            let done = false;
            const feed = () => {
              if (next >= jobs.length) {
                done = true;
                return resolve();
              }
              const id = next++;
              w.postMessage({ id, start: jobs[id]!.start, entries: jobs[id]!.entries, verifyOnly } satisfies ChunkRequest);
            };
            w.on('message', (r: ChunkResult) => {
              results[r.id] = r;
              // only a refusal wanted: none of the chunks after a refused one is handed out
              if (verifyOnly && r.failure) next = jobs.length;
              feed();
            });
            w.on('error', reject);
            // a worker gone without an error event (killed, out of memory) would leave its chunk unanswered for ever
            w.on('exit', (code) => {
              if (!done) reject(new Error(`ledger replay worker exited (code ${code}) before its chunks were checked`));
            });
            feed();
          }),
      ),
    );
  } finally {
    await Promise.all(pool.map((w) => w.terminate()));
  }
  return results;
}
