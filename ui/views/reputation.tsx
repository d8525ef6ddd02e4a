/**
 * Reputation: each provider's figures as this node derives them, a page at a time (`/v1/reputation?after=…`,
 * src/node/reputation-page.ts: a hostile peer can make up thousands of providers), and the evidence behind one
 * provider's figures.
 */
import { useState } from 'preact/hooks';
import { plural, useDebounced, useJson, useLiveVersion } from '../lib.js';
import { AddrLink, Did, ErrorBox, Loading, Pager, Status, TableBox, Verdict } from '../parts.js';

interface Figures {
  did: string;
  jobs: number;
  successes: number;
  failures: number;
  disputes: number;
  nonDeliveries: number;
  accepted: number;
  firstHand: number;
  secondHand: number;
  untrusted: number;
  quotePairs: number;
  accuracy: number;
  score: number;
}

interface Evidence {
  receipts: Array<{ address: string; job: string; buyer: string; status: string; verdict?: string; acceptance?: string }>;
  /** Receipts and non-deliveries held about the provider (the lists have the newest). */
  receiptsTotal?: number;
  nondeliveriesTotal?: number;
  nondeliveries: Array<{ address: string; job?: string; signer: string }>;
}

/** Providers per page (the daemon's default page). */
export const REPUTATION_PAGE = 100;

interface ReputationData {
  total: number;
  counted: number;
  firstHand: number;
  matched: number;
  offset: number;
  next?: string;
  providers: Figures[];
}

type RepSort = 'evidence' | 'score' | 'jobs' | 'provider';
const SORTS: Array<[RepSort, string]> = [
  ['evidence', 'evidence that counts first, then score'],
  ['score', 'score, lowest first'],
  ['jobs', 'jobs counted, fewest first'],
  ['provider', 'DID'],
];

export function Reputation() {
  const v = useLiveVersion((e) => e.type === 'records' && (e.counts.receipt !== undefined || e.counts.acceptance !== undefined || e.counts.nondelivery !== undefined || e.counts.nondelivery2 !== undefined || e.counts.nondelivery3 !== undefined), 2000);
  const [text, setText] = useState('');
  // the search goes to the daemon once typing pauses
  const search = useDebounced(text);
  const [sort, setSort] = useState<RepSort>('evidence');
  // as the Market view: the cursors the pages shown so far began after, for Previous; another filter or order starts over
  const view = JSON.stringify([search, sort]);
  const [trail, setTrail] = useState<{ view: string; afters: string[] }>({ view, afters: [] });
  const afters = trail.view === view ? trail.afters : [];
  const after = afters[afters.length - 1];
  const p = new URLSearchParams({ limit: String(REPUTATION_PAGE), sort });
  if (after !== undefined) p.set('after', after);
  if (search.trim()) p.set('q', search.trim());
  const r = useJson<ReputationData>(`/v1/reputation?${p.toString()}`, v, true);
  const [who, setWho] = useState<string | undefined>(undefined);
  const ev = useJson<Evidence>(who ? `/v1/console/evidence/${encodeURIComponent(who)}` : null, v);
  if (!r.data) return r.error ? <ErrorBox error={r.error} /> : <Loading what="reputation" />;
  const rows = r.data.providers;
  const first0 = r.data.offset;
  return (
    <>
      <h1 tabIndex={-1}>Reputation</h1>
      <p>Derived on this node from the receipts and acceptances it holds; a provider with no evidence scores 0.5 (unknown is not bad). Evidence from buyers this node does not trust counts for nothing (untrusted).</p>
      <p class="summary" role="status" id="reputation-summary">
        {plural(r.data.total, 'provider')} with evidence held; {r.data.counted} with evidence that counts, {r.data.firstHand} of them first-hand; {r.data.total - r.data.counted} with untrusted evidence only. {r.data.matched} match
        {rows.length ? `; showing ${first0 + 1}–${first0 + rows.length}` : ''}.
      </p>
      <ErrorBox error={r.error} />
      <div class="filters">
        <label>
          Search <input type="search" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} placeholder="DID" />
        </label>
        <label>
          Order{' '}
          <select value={sort} onChange={(e) => setSort((e.target as HTMLSelectElement).value as RepSort)}>
            {SORTS.map(([k, label]) => (
              <option key={k} value={k}>
                {label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <TableBox label="Providers by evidence and score (scrolls sideways on a narrow window)">
        <table>
          <caption>Providers ({first0 + 1}–{first0 + rows.length} of {r.data.matched})</caption>
          <thead>
            <tr>
              <th scope="col">Provider</th>
              <th scope="col">Score</th>
              <th scope="col">Jobs</th>
              <th scope="col">Successes</th>
              <th scope="col">Failures</th>
              <th scope="col">Disputes</th>
              <th scope="col">Non-deliveries</th>
              <th scope="col">Quote accuracy</th>
              <th scope="col">First / second hand</th>
              <th scope="col">Evidence</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((p) => (
              <tr key={p.did} class={who === p.did ? 'chosen' : ''}>
                <td>
                  <Did d={p.did} />
                </td>
                <td>{p.score.toFixed(3)}</td>
                <td>{p.jobs}</td>
                <td>{p.successes}</td>
                <td>{p.failures}</td>
                <td>{p.disputes}</td>
                <td>{p.nonDeliveries}</td>
                <td>{p.accuracy.toFixed(3)}</td>
                <td>
                  {p.firstHand} / {p.secondHand}
                  {p.untrusted ? ` (${p.untrusted} untrusted)` : ''}
                </td>
                <td>
                  <button type="button" onClick={() => setWho(p.did)} aria-label={`Show evidence for ${p.did}`}>
                    Show
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableBox>
      <Pager label="Reputation pages" size={REPUTATION_PAGE} afters={afters} next={r.data.next} go={(a) => setTrail({ view, afters: a })} />
      {who ? (
        <section aria-labelledby="evidence">
          <h2 id="evidence">
            Evidence for <Did d={who} />
          </h2>
          <ErrorBox error={ev.error} />
          {ev.data ? (
            <ul>
              {ev.data.receipts.map((x) => (
                <li key={x.address}>
                  receipt <AddrLink a={x.address} /> <Status s={x.status} /> for job <AddrLink a={x.job} /> from buyer <Did d={x.buyer} />
                  {x.acceptance ? (
                    <>
                      {' '}
                      · acceptance <AddrLink a={x.acceptance} /> <Verdict v={x.verdict} receiptStatus={x.status} />
                    </>
                  ) : null}
                </li>
              ))}
              {ev.data.nondeliveries.map((x) => (
                <li key={x.address}>
                  non-delivery <AddrLink a={x.address} /> signed by <Did d={x.signer} />
                </li>
              ))}
              {ev.data.receipts.length + ev.data.nondeliveries.length === 0 ? <li>no evidence held</li> : null}
              {ev.data.receiptsTotal !== undefined && ev.data.receiptsTotal > ev.data.receipts.length ? <li>and {ev.data.receiptsTotal - ev.data.receipts.length} older receipts (the newest {ev.data.receipts.length} are listed)</li> : null}
              {ev.data.nondeliveriesTotal !== undefined && ev.data.nondeliveriesTotal > ev.data.nondeliveries.length ? <li>and {ev.data.nondeliveriesTotal - ev.data.nondeliveries.length} older non-deliveries</li> : null}
            </ul>
          ) : (
            <Loading what="evidence" />
          )}
        </section>
      ) : null}
    </>
  );
}
