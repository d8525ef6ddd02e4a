/**
 * Market: the providers this node knows (adverts, presence, hardware, prices,
 * tier, region, reputation), a page at a time: the daemon filters and sorts
 * and sends one page (`/v1/market?after=…`, src/node/market-page.ts), so a
 * refresh costs the node the same at 100 providers as at the 10,000-advert
 * cap. Next asks for the page after the last row shown (the daemon's cursor,
 * `next`), not for a position: a provider that drops out meanwhile shifts no
 * one past the user; Previous goes back to the cursor the page before began at. The page is a virtualised list (only the rows in view are in the DOM).
 * Choosing one of this node's jobs adds each provider's eligibility for it,
 * with every failed requirement: the page's providers', asked for by name.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { fmtMiB, money, peer, plural, useDebounced, useJson, useLiveVersion, overlayQuery } from '../lib.js';
import { AddrLink, Did, ErrorBox, Loading, Pager, Status } from '../parts.js';
import { compactAmount } from '../amount.js';
import { dateTime, endedSummary, whenText } from '../format.js';

export interface AdvertRow {
  type: string;
  address: string;
  signer: string;
  /** Who the market knows it as: the pool's DID for a pool member's advert (docs/pools.md), else the signer. */
  provider?: string;
  /** A pool: its members seen; those present now and their free slots together (absent from a daemon before them). */
  pool?: { did: string; members: number; present?: number; freeSlots?: number };
  live: boolean;
  /** The reputation of `provider`. */
  reputation: number;
  freeSlots?: number;
  record: {
    seq: number;
    expiresAt: number;
    workloads: string[];
    tier: string;
    region?: string;
    hardware: { cpuCores: number; memoryMiB: number; gpus?: Array<{ model: string; vramMiB: number; count: number }> };
    prices?: Array<{ workload: string; unit: string; price: { amount: string; currency: string } }>;
  };
}

interface MarketData {
  total: number;
  /** adverts from new advertisers the flood limit turned away since the node started (absent: none) */
  advertsTurnedAway?: number;
  live: number;
  /** Presence is per machine: `pooled`, how many of those present are members of how many pools (each listed once). */
  presence: { live: number; freeSlots: number; pooled?: { members: number; pools: number } };
  /** Providers that pass the filters; `adverts` is the page of them, `offset` of them before it. */
  matched: number;
  offset: number;
  /** The cursor of the page after (sent back as `after`), when there is one. */
  next?: string;
  workloads: string[];
  /** sort=price: the currency whose prices come first (the others follow, grouped by currency). */
  currency?: string;
  adverts: AdvertRow[];
}

interface Verdict {
  provider: string;
  eligible: boolean;
  failures: Array<{ code: string; field: string; message: string }>;
}

type SortKey = 'provider' | 'tier' | 'region' | 'cpu' | 'memory' | 'gpu' | 'price' | 'reputation' | 'slots';
const TIERS = ['community', 'standard', 'verified', 'private', 'enterprise'];

const ROW_H = 44;
const VIEW_ROWS = 14;
/** Providers per page (the daemon's default page). */
export const MARKET_PAGE = 100;
/** The market view refetches at most this often (presence and adverts arrive all the time in a large market). */
const REFRESH_MS = 5000;

function gpuText(a: AdvertRow): string {
  const g = a.record.hardware.gpus ?? [];
  return g.length ? g.map((x) => `${x.count}× ${peer(x.model)} ${fmtMiB(x.vramMiB)}`).join(', ') : 'none';
}

/** The identity a row stands for in the market: a pool under the pool's DID (its score is the pool's). */
export function providerOf(a: AdvertRow): string {
  return a.provider ?? a.signer;
}

/** The query of one page of the market, as the daemon reads it (src/node/market-page.ts). */
/** The longest search the daemon reads (`q`, src/node/market-page.ts). */
export const SEARCH_MAX = 200;

export function marketQuery(o: { after?: string; sort: SortKey; desc: boolean; text: string; tier: string; workload: string; liveOnly: boolean; overlay?: string }): string {
  const p = new URLSearchParams({ limit: String(MARKET_PAGE), sort: o.sort });
  if (o.after !== undefined) p.set('after', o.after);
  if (o.desc) p.set('desc', '1');
  if (o.text.trim()) p.set('q', o.text.trim());
  if (o.tier) p.set('tier', o.tier);
  if (o.workload) p.set('workload', o.workload);
  if (o.liveOnly) p.set('live', '1');
  if (o.overlay) p.set('overlay', o.overlay);
  return `/v1/market?${p.toString()}`;
}

/**
 * The eligibility of the page's providers for one of this node's jobs: `GET /v1/offers/:job?providers=` with the
 * signers of the page's rows (at most a page: the daemon takes up to OFFERS_PROVIDERS_MAX = MARKET_PAGE), so a
 * refresh costs the same at 100 providers as at the advert cap. The whole market's summary comes with it.
 */
export function offersQuery(job: string, rows: AdvertRow[], overlay?: string): string {
  // a DID is `did:key:` and base58: nothing to escape
  const providers = [...new Set(rows.map((a) => a.signer))].slice(0, MARKET_PAGE).join(',');
  return `/v1/offers/${encodeURIComponent(job)}?providers=${providers}${overlayQuery(overlay, false)}`;
}

/**
 * The first price: the amount in a compact exact form (ui/amount.ts) and the currency beside it, never cut; the full
 * price in the title. (The cell was cut at its end: `0.200000000 BTC` read `0.2000000…`, review s43 R3 F2.)
 */
function PriceCell({ p }: { p: { workload: string; unit: string; price: { amount: string; currency: string } } | undefined }) {
  if (!p) return <span role="cell" class="c-price">—</span>;
  return (
    <span role="cell" class="c-price" title={`${p.price.amount} ${p.price.currency} per ${p.unit} (${peer(p.workload)})`}>
      <span class="amt">{compactAmount(p.price.amount)}</span> <span class="cur">{p.price.currency}</span>
    </span>
  );
}

export function Market() {
  const [overlay] = useState<string | undefined>(undefined);
  const v = useLiveVersion((e) => e.type === 'records' && (e.counts.advert !== undefined || e.counts.presence !== undefined || e.counts.receipt !== undefined), REFRESH_MS);
  const [text, setText] = useState('');
  // the search goes to the daemon once typing pauses
  const search = useDebounced(text);
  const [tier, setTier] = useState('');
  const [workload, setWorkload] = useState('');
  const [liveOnly, setLiveOnly] = useState(true);
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: 'provider', desc: false });
  // The cursors the pages shown so far began after (none: the first page), for Previous. A cursor is for the
  // filter and order it came from, so another filter or order starts at the first page in the same render.
  const view = JSON.stringify([search, tier, workload, liveOnly, sort.key, sort.desc]);
  const [trail, setTrail] = useState<{ view: string; afters: string[] }>({ view, afters: [] });
  const afters = trail.view === view ? trail.afters : [];
  const after = afters[afters.length - 1];
  const [top, setTop] = useState(0);
  useEffect(() => setTop(0), [after]);
  const m = useJson<MarketData>(marketQuery({ ...(after !== undefined ? { after } : {}), sort: sort.key, desc: sort.desc, text: search, tier, workload, liveOnly, overlay }), v, true);
  const jobs = useJson<{ buyer: Array<{ address: string; workload: string; announcedAt: number }> }>(`/v1/console/jobs${overlayQuery(overlay)}`, v);
  const [job, setJob] = useState('');
  const rows = m.data?.adverts ?? [];
  // the verdicts of the page's providers only (the daemon's explanation of every provider was ~3 MB at the advert cap)
  const ex = useJson<{ explanation?: { providers: Verdict[]; summary: string }; ended?: { at: number } }>(job ? offersQuery(job, rows, overlay) : null, v, true);
  const [chosen, setChosen] = useState<string | undefined>(undefined);

  const verdicts = useMemo(() => new Map((ex.data?.explanation?.providers ?? []).map((p) => [p.provider, p])), [ex.data]);
  const workloads = m.data?.workloads ?? [];
  const first0 = m.data?.offset ?? 0;

  if (!m.data) return m.error ? <ErrorBox error={m.error} /> : <Loading what="the market" />;
  const first = Math.max(0, Math.floor(top / ROW_H) - 4);
  const last = Math.min(rows.length, first + VIEW_ROWS + 8);
  const header = (key: SortKey, label: string) => (
    <span role="columnheader" class={`c-${key}`} aria-sort={sort.key === key ? (sort.desc ? 'descending' : 'ascending') : 'none'}>
      <button type="button" class="sort" onClick={() => setSort((s) => ({ key, desc: s.key === key ? !s.desc : false }))}>
        {label}
        <span aria-hidden="true">{sort.key === key ? (sort.desc ? ' ▼' : ' ▲') : ''}</span>
      </button>
    </span>
  );
  const sel = chosen ? rows.find((a) => a.signer === chosen) : undefined;
  return (
    <>
      <h1 tabIndex={-1}>Market</h1>
      <p class={m.error ? 'summary stale' : 'summary'} role="status">
        {plural(m.data.total, 'provider')} known, {m.data.live} with a live advert; {m.data.presence.live} present{m.data.presence.pooled ? ` (${m.data.presence.pooled.members} of them members of ${plural(m.data.presence.pooled.pools, 'pool')})` : ''} with {plural(m.data.presence.freeSlots, 'free slot')}. {m.data.matched} match
        {rows.length ? `; showing ${first0 + 1}–${first0 + rows.length}` : ''}.
        {sort.key === 'price' && m.data.currency ? ` By price: ${m.data.currency} prices first (the currency most providers quote in), then each other currency on its own; prices in two currencies are never compared.` : ''}
        {m.data.advertsTurnedAway ? ` ⚠ ${plural(m.data.advertsTurnedAway, 'advert')} from new advertisers turned away by the node's new-advertiser rate limit since it started: those providers are missing here until their adverts are heard again.` : ''}
      </p>
      <ErrorBox error={m.error} />
      {m.error ? (
        <p class="stale" role="status">
          Not current: the last request failed; the figures and the providers below are from the answer before it.
        </p>
      ) : null}
      <div class="filters">
        <label>
          {/* the daemon reads the first 200 characters of a search (src/node/market-page.ts); 20,000 were refused with HTTP 431 */}
          Search <input type="search" value={text} maxLength={SEARCH_MAX} onInput={(e) => setText((e.target as HTMLInputElement).value)} placeholder="DID, region, GPU" />
        </label>
        <label>
          Tier{' '}
          <select value={tier} onChange={(e) => setTier((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            {TIERS.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Workload{' '}
          <select value={workload} onChange={(e) => setWorkload((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            {workloads.map((w) => (
              <option key={w}>{w}</option>
            ))}
          </select>
        </label>
        <label class="check">
          <input type="checkbox" checked={liveOnly} onChange={(e) => setLiveOnly((e.target as HTMLInputElement).checked)} /> live adverts only
        </label>
        <label>
          Eligibility for job{' '}
          <select value={job} onChange={(e) => setJob((e.target as HTMLSelectElement).value)}>
            <option value="">(none chosen)</option>
            {(jobs.data?.buyer ?? []).map((j) => (
              <option key={j.address} value={j.address}>
                {j.workload} {j.address.slice(7, 15)} · {dateTime(j.announcedAt)}
              </option>
            ))}
          </select>
        </label>
      </div>
      {job && ex.data?.explanation ? <p class="explain">{endedSummary(ex.data.explanation.summary, ex.data.ended)}</p> : null}
      <div class="grid-wrap" tabIndex={0} role="region" aria-label="Providers (scrolls sideways on a narrow window)">
      <div class={m.error ? 'grid stale' : 'grid'} role="table" aria-label="Providers" aria-rowcount={m.data.matched + 1}>
        <div role="rowgroup">
          <div role="row" class="row head" aria-rowindex={1}>
            {header('provider', 'Provider')}
            <span role="columnheader" class="c-live">
              Advert
            </span>
            {header('tier', 'Tier')}
            {header('region', 'Region')}
            {header('cpu', 'CPU')}
            {header('memory', 'Memory')}
            {header('gpu', 'GPUs')}
            {header('price', 'Price')}
            {header('slots', 'Free')}
            {header('reputation', 'Rep.')}
            {job ? (
              <span role="columnheader" class="c-elig">
                Eligible?
              </span>
            ) : null}
          </div>
        </div>
        <div class="scroller" key={after ?? ''} role="rowgroup" style={{ height: `${Math.min(rows.length, VIEW_ROWS) * ROW_H + 2}px` }} onScroll={(e) => setTop((e.target as HTMLElement).scrollTop)} tabIndex={0} aria-label="Provider rows (scroll)">
          <div style={{ height: `${rows.length * ROW_H}px`, position: 'relative' }}>
            {rows.slice(first, last).map((a, i) => {
              const verdict = verdicts.get(a.signer);
              return (
                <div role="row" class={`row${chosen === a.signer ? ' chosen' : ''}`} key={a.signer} aria-rowindex={first0 + first + i + 2} style={{ top: `${(first + i) * ROW_H}px` }}>
                  <span role="cell" class="c-provider">
                    <button type="button" class="linkish" onClick={() => setChosen(a.signer)}>
                      <Did d={providerOf(a)} />
                    </button>
                    {a.pool ? <small> pool of {a.pool.members}</small> : null}
                  </span>
                  <span role="cell" class="c-live">
                    <Status s={a.live ? 'live' : 'expired'} />
                  </span>
                  <span role="cell" class="c-tier">
                    {a.record.tier}
                  </span>
                  <span role="cell" class="c-region">
                    {a.record.region !== undefined ? peer(a.record.region) : '(undisclosed)'}
                  </span>
                  <span role="cell" class="c-cpu">
                    {a.record.hardware.cpuCores} cores
                  </span>
                  <span role="cell" class="c-memory">
                    {fmtMiB(a.record.hardware.memoryMiB)}
                  </span>
                  <span role="cell" class="c-gpu">
                    {gpuText(a)}
                  </span>
                  <PriceCell p={a.record.prices?.[0]} />
                  <span role="cell" class="c-slots">
                    {a.pool?.freeSlots ?? a.freeSlots ?? '—'}
                  </span>
                  <span role="cell" class="c-reputation">
                    {a.reputation.toFixed(2)}
                  </span>
                  {job ? (
                    <span role="cell" class="c-elig" title={verdict && !verdict.eligible ? verdict.failures.map((f) => f.code).join(', ') : undefined}>
                      {verdict ? <Status s={verdict.eligible ? 'eligible' : 'ineligible'} /> : '—'}
                      {verdict && !verdict.eligible ? <small> {verdict.failures.map((f) => f.code).join(', ')}</small> : null}
                    </span>
                  ) : null}
                </div>
              );
            })}
          </div>
        </div>
      </div>
      </div>
      <Pager label="Market pages" size={MARKET_PAGE} afters={afters} next={m.data.next} go={(a) => setTrail({ view, afters: a })} />
      {sel ? (
        <section class="detail" aria-labelledby="provider-detail">
          <h2 id="provider-detail">
            {sel.pool ? 'Pool' : 'Provider'} <Did d={providerOf(sel)} />
          </h2>
          <dl class="kv">
            <dt>DID</dt>
            <dd>
              <code class="wrap">{providerOf(sel)}</code>
            </dd>
            {sel.pool ? (
              <>
                <dt>Pool</dt>
                <dd>
                  {sel.pool.members} member{sel.pool.members === 1 ? '' : 's'} seen; this advert signed by the member <code class="wrap">{sel.signer}</code>
                </dd>
              </>
            ) : null}
            <dt>Advert</dt>
            <dd>
              <AddrLink a={sel.address} overlay={overlay} /> seq {sel.record.seq}, expires {whenText(sel.record.expiresAt)}
            </dd>
            <dt>Workloads</dt>
            <dd>{peer(sel.record.workloads.join(', '))}</dd>
            <dt>Prices</dt>
            <dd>{(sel.record.prices ?? []).map((p) => `${p.workload}: ${money(p.price)} per ${p.unit}`).join('; ') || '—'}</dd>
            {verdicts.get(sel.signer) ? (
              <>
                <dt>For the chosen job</dt>
                <dd>
                  {verdicts.get(sel.signer)!.eligible ? (
                    <Status s="eligible" />
                  ) : (
                    <ul>
                      {verdicts.get(sel.signer)!.failures.map((f) => (
                        <li key={f.code}>
                          <strong>{f.code}</strong> ({f.field}): {peer(f.message)}
                        </li>
                      ))}
                    </ul>
                  )}
                </dd>
              </>
            ) : null}
          </dl>
          <p>
            <a href={`#/reputation`}>Reputation of every provider</a>
          </p>
        </section>
      ) : null}
    </>
  );
}
