/** Reputation: each provider's figures as this node derives them, and the evidence behind one provider's figures. */
import { useState } from 'preact/hooks';
import { useJson, useLiveVersion } from '../lib.js';
import { AddrLink, Did, ErrorBox, Loading, Status } from '../parts.js';

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

export function Reputation() {
  const v = useLiveVersion((e) => e.type === 'records' && (e.counts.receipt !== undefined || e.counts.acceptance !== undefined || e.counts.nondelivery !== undefined || e.counts.nondelivery2 !== undefined), 2000);
  const r = useJson<{ providers: Figures[] }>('/v1/reputation', v);
  const [who, setWho] = useState<string | undefined>(undefined);
  const ev = useJson<Evidence>(who ? `/v1/console/evidence/${encodeURIComponent(who)}` : null, v);
  if (!r.data) return r.error ? <ErrorBox error={r.error} /> : <Loading what="reputation" />;
  return (
    <>
      <h1 tabIndex={-1}>Reputation</h1>
      <p>Derived on this node from the receipts and acceptances it holds; a provider with no evidence scores 0.5 (unknown is not bad).</p>
      <ErrorBox error={r.error} />
      <div class="scroll-x" tabIndex={0} role="region" aria-label="Providers by score">
        <table>
          <caption>Providers by score ({r.data.providers.length})</caption>
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
            {[...r.data.providers]
              .sort((a, b) => b.score - a.score || (a.did < b.did ? -1 : 1))
              .map((p) => (
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
      </div>
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
                      · acceptance <AddrLink a={x.acceptance} /> <Status s={x.verdict} />
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
