/**
 * The records a buyer's decision about a job rests on, for an audit anywhere (docs/market.md §9 "Exporting a job's
 * records"): the job; each selection held for it; the offers (or, for an open order, the claims) each one considered
 * and the adverts they cite; the reputation evidence about the providers considered (the receipts naming them with
 * their acceptances and the offers they cite, the non-deliveries against them: EvidenceStore.evidenceFor, exactly what
 * a derivation of their figures reads); and the job's own receipts with their verdicts.
 *
 * `GET /v1/jobs/:job/records` answers it and `c0mpute market export` writes it a file per record, which
 * `c0mpute market audit --selection S --records DIR` reads: the buyer, or anyone it gives the directory, recomputes the
 * decision from signed records alone. An audit judges evidence by its own dates, so evidence dated after the
 * decision is exported too and left out by the audit (docs/market.md §7). A record named but no longer held (an
 * advert pruned, evidence evicted past `reputation.maxEvidence`) is listed under `missing`: the audit will say
 * AUDIT_MISSING_RECORD for it.
 */
import { C0Error } from '../errors.js';
import { openAny, type Opened } from '../records/envelope.js';
import { T, type Claim, type Offer } from '../records/kinds.js';
import type { EvidenceStore } from '../reputation/store.js';
import type { RecordStore } from '../store/records.js';

/** Records an export holds at most: past it the answer is refused (JOB_RECORDS_TOO_MANY) rather than cut short. */
export const JOB_RECORDS_MAX = 100_000;

export interface JobRecordsSource {
  records: Pick<RecordStore, 'get' | 'getBytes' | 'selectionsOf'>;
  evidence: Pick<EvidenceStore, 'evidenceFor' | 'receiptsOf' | 'acceptancesOf'>;
  /** Bytes held outside the record store (the offer book, the evidence store). */
  otherBytes(address: string): Promise<Uint8Array | undefined>;
}

export interface JobRecords {
  job: string;
  /** Every record found, each once, in the order they were found (the job first). */
  records: Opened[];
  /** Records named by those found that this node does not hold, with what named them. */
  missing: Array<{ address: string; what: string }>;
}

/**
 * JOB_NOT_FOUND for an address that names no job held. One this node holds as another record of a job (a selection,
 * an offer, a receipt…) says which, and names its job: the address printed for a selection was taken for the job's
 * (QA, reputation and audit pass, F12: `market export --job <a selection's address>` said only that no job was held).
 */
async function notAJob(src: JobRecordsSource, address: string, keepDays: number): Promise<C0Error> {
  const bytes = (await src.records.getBytes(address)) ?? (await src.otherBytes(address));
  let r: Opened | undefined;
  try {
    r = bytes ? openAny(bytes, { trusted: true }) : undefined;
  } catch {
    r = undefined;
  }
  const of = (r?.record as { job?: unknown } | undefined)?.job;
  if (r && typeof of === 'string') {
    return new C0Error('JOB_NOT_FOUND', `${address} is not a job: this node holds it as a ${r.type}, of job ${of} (export that: c0mpute market export --job ${of})`, { field: 'job', detail: { type: r.type, job: of } });
  }
  if (r) return new C0Error('JOB_NOT_FOUND', `${address} is not a job: this node holds it as a ${r.type}`, { field: 'job', detail: { type: r.type } });
  return new C0Error('JOB_NOT_FOUND', `this node holds no job ${address}${keepDays > 0 ? ` (a job goes ${keepDays} days after its deadline: history.keepDays)` : ''}`, { field: 'job' });
}

/** `keepDays`: the history's keep (history.keepDays), named when the job is not held. */
export async function jobRecords(src: JobRecordsSource, job: string, keepDays = 0): Promise<JobRecords> {
  const jobRec = await src.records.get(job, T.job);
  if (!jobRec) throw await notAJob(src, job, keepDays);
  const out = new Map<string, Opened>([[jobRec.address, jobRec]]);
  const missing: JobRecords['missing'] = [];
  const add = (r: Opened): void => {
    if (out.has(r.address)) return;
    if (out.size >= JOB_RECORDS_MAX) throw new C0Error('JOB_RECORDS_TOO_MANY', `the records of job ${job} pass ${JOB_RECORDS_MAX.toLocaleString('en')}: the evidence about its providers is too large to export at once`, { field: 'job' });
    out.set(r.address, r);
  };
  const fetch = async (address: string, what: string): Promise<Opened | undefined> => {
    const held = out.get(address);
    if (held) return held;
    const bytes = (await src.records.getBytes(address)) ?? (await src.otherBytes(address));
    if (!bytes) {
      missing.push({ address, what });
      return undefined;
    }
    const r = openAny(bytes, { trusted: true });
    add(r);
    return r;
  };

  const providers = new Set<string>();
  for (const sel of await src.records.selectionsOf(job)) {
    add(sel);
    for (const c of sel.record.considered) {
      providers.add(c.provider);
      const o = await fetch(c.offer, `${sel.record.policy === 'first-claim' ? 'claim' : 'offer'} of ${c.provider} considered by selection ${sel.address}`);
      // offers and claims alike cite the advert they were made under
      const advert = o && (o.type === T.offer || o.type === T.claim) ? (o.record as Offer | Claim).advert : undefined;
      if (advert) await fetch(advert, `advert cited by ${o!.address}`);
    }
    // an open order's selection also lists the claims that opened before the winner (their arrival order is audited)
    for (const a of sel.record.arrivals ?? []) {
      const c = await fetch(a.claim, `claim of ${a.provider} among the arrivals of selection ${sel.address}`);
      if (c?.type === T.claim) await fetch((c.record as Claim).advert, `advert cited by ${c.address}`);
    }
  }
  const ev = src.evidence.evidenceFor(providers);
  for (const list of [ev.receipts, ev.acceptances, ev.offers, ev.nondeliveries ?? []]) for (const r of list) add(r);
  for (const r of src.evidence.receiptsOf(job)) {
    add(r);
    for (const a of src.evidence.acceptancesOf(r.address)) add(a);
  }
  return { job: jobRec.address, records: [...out.values()], missing };
}
