/**
 * Jobs: this node's jobs as buyer and as provider, live; and a job's page: its
 * walk as a timeline (job → offers → decision → selection → exec → receipt →
 * acceptance) with every record's content address linking to the decoded
 * record, and failover attempts shown as such.
 */
import { Component } from 'preact';
import { ago, fmtDuration, fmtJoules, money, overlayQuery, peer, useFeed, useJson, useLiveVersion, useNow, useRunEvents } from '../lib.js';
import { RUN_LOG_EVENTS } from '../../src/util/run-log.js';
import { narrate, runningPhrase } from '../narrate.js';
import { plural, tookText, whenText } from '../format.js';
import { AddrLink, Did, ErrorBox, Loading, Pager, Section, Status, TableBox, Verdict } from '../parts.js';
import { useState } from 'preact/hooks';
import { decisionView, emptyStepNote, executionNote, jobState, lateText, outcomeView, type DecisionView, type Explanation, type IneligibleLines, type RunOutcome } from '../job-walk.js';

/** The buyer's jobs a page at a time: the daemon's page (console-routes.ts CONSOLE_JOBS). */
const JOBS_PAGE = 50;

interface JobsData {
  /** `status`: how this node's run ended (never a late receipt's); `verdict`: accepted, disputed or non-delivery; `late`: a receipt that came after the run ended (its note and status). */
  buyer: Array<{ address: string; workload: string; announcedAt: number; attempts: number; status?: string; code?: string; note?: string; provider?: string; verdict?: string; late?: string; lateStatus?: string }>;
  /** Older jobs exist than the newest shown (`c0mpute jobs --all` lists them). */
  buyerMore?: boolean;
  /** the cursor of the buyer's next (older) page: GET /v1/console/jobs?before=… */
  buyerNext?: string;
  provider: Array<{ address: string; job: string; buyer: string; workload: string; status: string; failure?: string; startedAt: number; completedAt: number; verdict?: string }>;
  /** Receipts this node signed, all held (the list shows the newest). */
  providerTotal?: number;
  running: Array<{ run: number; job?: string; startedAt: number; events: Array<Record<string, unknown> & { e: string }> }>;
  providerRunning: number;
}

export function Jobs() {
  const v = useLiveVersion((e) => e.type === 'job' || (e.type === 'records' && (e.counts.receipt !== undefined || e.counts.acceptance !== undefined)) || (e.type === 'health' && Object.values(e.sample.overlays).some((o) => o.running > 0)));
  // the buyer's jobs a page of 50 at a time, older pages by the daemon's cursor (QA ffConsole F3: the newest 50 were all)
  const [afters, setAfters] = useState<string[]>([]);
  const before = afters.at(-1);
  const r = useJson<JobsData>(`/v1/console/jobs${before !== undefined ? `?before=${encodeURIComponent(before)}` : ''}`, v);
  // the node's roles: a node that is no buyer is not offered to run a job (QA qaCon F9)
  const ovs = useJson<{ overlays: Array<{ roles: string[] }> }>('/v1/console/overview');
  const buyer = !ovs.data || ovs.data.overlays.some((o) => o.roles.includes('buyer'));
  // "started 15 s ago" and "Announced" age between the feed's events (redrawn, not refetched)
  const now = useNow(1000);
  const d = r.data;
  if (!d) return r.error ? <ErrorBox error={r.error} /> : <Loading what="jobs" />;
  return (
    <>
      <h1 tabIndex={-1}>Jobs</h1>
      <ErrorBox error={r.error} />
      <p id="jobs-run">{buyer ? <a href="#/run">Run a job</a> : 'This node is not a buyer on any overlay: it runs no jobs of its own (add buyer to its roles to run some).'}</p>
      {d.running.length ? (
        <Section title="Running now">
          <ul class="running">
            {d.running.map((x) => (
              <li key={x.run}>
                {x.job ? <a href={`#/jobs/${encodeURIComponent(x.job)}`}>job {x.job.slice(7, 15)}…</a> : `run ${x.run}`} started {ago(x.startedAt, now)}:{' '}
                <span class="st st-mid">
                  <span aria-hidden="true">…</span> {runningPhrase(x.events)}
                </span>
              </li>
            ))}
          </ul>
        </Section>
      ) : null}
      <Section title="As buyer">
        <TableBox label="Jobs as buyer (scrolls sideways on a narrow window)">
        <table>
          <caption>
            Jobs this node announced, newest first ({afters.length === 0 ? (d.buyerMore ? `the newest ${d.buyer.length}; Next ${JOBS_PAGE} for older ones` : d.buyer.length) : `${d.buyer.length} older ones, page ${afters.length + 1}`})
          </caption>
          <thead>
            <tr>
              <th scope="col">Job</th>
              <th scope="col">Workload</th>
              <th scope="col">Announced</th>
              <th scope="col">Attempts</th>
              <th scope="col">Outcome</th>
              <th scope="col">Acceptance</th>
              <th scope="col">Provider</th>
            </tr>
          </thead>
          <tbody>
            {d.buyer.length === 0 ? (
              <tr>
                <td colSpan={7}>
                  none yet{buyer ? <>: <a href="#/run">run one</a></> : null}
                </td>
              </tr>
            ) : (
              d.buyer.map((j) => (
                <tr key={j.address}>
                  <td>
                    <a href={`#/jobs/${encodeURIComponent(j.address)}`} title={j.address}>
                      <code>{j.address.slice(7, 15)}…</code>
                    </a>
                  </td>
                  <td>{j.workload}</td>
                  <td>{ago(j.announcedAt, now)}</td>
                  <td>{j.attempts}</td>
                  <td title={j.note}>
                    <Status s={j.status} />
                    {j.code ? <small> ({j.code})</small> : null}
                  </td>
                  <td>
                    {j.verdict || !j.late ? <Verdict v={j.verdict} receiptStatus={j.status} /> : null}
                    {j.late ? (
                      <>
                        {j.verdict ? ' ' : null}
                        <span class="st st-mid" title={j.late}>
                          <span aria-hidden="true">…</span> {lateText(j.lateStatus)}
                        </span>
                      </>
                    ) : null}
                  </td>
                  <td>
                    <Did d={j.provider} />
                  </td>
                </tr>
              ))
            )}
          </tbody>
        </table>
        </TableBox>
        {afters.length > 0 || d.buyerNext !== undefined ? <Pager label="Pages of jobs as buyer" size={JOBS_PAGE} afters={afters} next={d.buyerNext} go={setAfters} /> : null}
      </Section>
      <Section title="As provider">
        <p>Running now: {d.providerRunning}</p>
        <TableBox label="Receipts as provider (scrolls sideways on a narrow window)">
        <table>
          <caption>Receipts this node signed ({d.providerTotal !== undefined && d.providerTotal > d.provider.length ? `the newest ${d.provider.length} of ${d.providerTotal}` : d.provider.length})</caption>
          <thead>
            <tr>
              <th scope="col">Receipt</th>
              <th scope="col">Job</th>
              <th scope="col">Workload</th>
              <th scope="col">Buyer</th>
              <th scope="col">Outcome</th>
              <th scope="col">Acceptance</th>
              <th scope="col">Took</th>
            </tr>
          </thead>
          <tbody>
            {d.provider.length === 0 ? (
              <tr>
                <td colSpan={7}>none</td>
              </tr>
            ) : (
              d.provider.map((r) => (
                <tr key={r.address}>
                  <td>
                    <AddrLink a={r.address} />
                  </td>
                  <td>
                    <AddrLink a={r.job} />
                  </td>
                  <td>{r.workload}</td>
                  <td>
                    <Did d={r.buyer} />
                  </td>
                  <td>
                    <Status s={r.status} />
                  </td>
                  <td>
                    <Verdict v={r.verdict} receiptStatus={r.status} />
                  </td>
                  <td>{tookText(r)}</td>
                </tr>
              ))
            )}
          </tbody>
        </table>
        </TableBox>
      </Section>
    </>
  );
}

type Rec<R = Record<string, unknown>> = { type: string; address: string; signer: string; record: R; held?: boolean };
type Ev = Record<string, unknown> & { e: string };

interface Walk {
  job: Rec<{ workload: string; maxPrice: { amount: string; currency: string }; deadline: number; announcedAt: number; requirements: Record<string, unknown> }>;
  offers: Array<Rec<{ price: { amount: string; currency: string }; durationMs?: number }>>;
  selections: Array<Rec<{ winner: string; policy: string; decidedAt: number; considered: Array<{ provider: string; offer: string }>; arrivals?: unknown[] }>>;
  receipts: Array<Rec<{ status: string; provider: string; offer: string; startedAt: number; completedAt: number; energy?: { uj: number; grade: string }; failure?: { code: string; message?: string } }>>;
  acceptances: Array<Rec<{ receipt: string; verdict: string; reason?: string }>>;
  nondeliveries: Array<Rec<{ provider: string; reason?: string }>>;
  explanation: Explanation;
  run?: { done: boolean; events: Ev[]; omitted?: number };
  /** this node's own job: how its run ended, and a receipt that came after it (src/node/job-history.ts) */
  outcome?: RunOutcome;
  late?: { receipt: string; provider: string; status: string; note: string };
  /** this node's own job: how an attempt that got no receipt and no non-delivery ended, as its run said it, by selection */
  attemptNotes?: Record<string, { code?: string; message: string }>;
}

export function JobPage({ address, overlay }: { address: string; overlay?: string | undefined }) {
  const v = useLiveVersion((e) => (e.type === 'job' && e.job === address) || (e.type === 'records' && (e.counts.receipt !== undefined || e.counts.acceptance !== undefined || e.counts.selection !== undefined)), 700);
  const r = useJson<Walk>(`/v1/console/job/${encodeURIComponent(address)}${overlayQuery(overlay)}`, v);
  // the live events, bounded as the daemon bounds the run's log (src/util/run-log.ts)
  const live = useRunEvents<Ev>(address);
  useFeed(
    (e) => {
      if (e.type === 'job' && e.job === address) live.push(e.ev);
    },
    [address, live],
  );
  // a running job turns ended when its deadline passes, without an event to say so
  const now = useNow(5000);
  const w = r.data;
  if (!w)
    return r.error ? (
      // a job this node does not hold (JOB_NOT_FOUND) says so under the page's heading, with the way back
      <>
        <h1 tabIndex={-1}>
          Job <code title={address}>{address.slice(7, 19)}…</code>
        </h1>
        <p>
          <a href="#/jobs">← all jobs</a>
        </p>
        <ErrorBox error={r.error} />
      </>
    ) : (
      <Loading what="the job" />
    );
  // whichever has seen more of the run: the daemon's log (a page opened mid-run) or the page's own
  const fromWalk = w.run !== undefined && w.run.events.length + (w.run.omitted ?? 0) >= live.log.seen;
  const events = fromWalk ? w.run!.events : live.log.events;
  const omitted = fromWalk ? (w.run!.omitted ?? 0) : live.log.omitted;
  const keyOf = (i: number) => (fromWalk ? `w${i}` : `l${live.log.seqs[i]}`);
  const progress = events.map((e, i) => ({ e, key: keyOf(i) })).filter(({ e }) => e.e === 'progress' || e.e === 'accepted' || e.e === 'verified' || e.e === 'failover' || e.e === 'nondelivery');
  const lastPermille = [...events].reverse().find((e) => e.e === 'progress' && typeof e.permille === 'number')?.permille as number | undefined;
  // ended: the run said so, or (no run held) a receipt, a non-delivery or the deadline says so; never "running" then
  const state = jobState(w, events, now);
  const done = state !== 'running';
  const decision = decisionView(events, state, w.explanation);
  const note = executionNote(state, w, w.outcome);
  const outcome = w.outcome ? outcomeView(w.outcome) : undefined;
  const ov = overlay;
  return (
    <>
      <h1 tabIndex={-1}>
        Job <code title={address}>{address.slice(7, 19)}…</code>
      </h1>
      <p>
        <a href="#/jobs">← all jobs</a>
      </p>
      <ErrorBox error={r.error} />
      {outcome && (outcome.status || done) ? (
        <p class="outcome">
          Outcome: <Status s={outcome.status} /> {outcome.text}
          {w.outcome?.provider ? (
            <>
              , provider <Did d={w.outcome.provider} />
            </>
          ) : null}
        </p>
      ) : null}
      {w.late ? (
        <p class="late">
          <Status s="late" /> <Did d={w.late.provider} />: {peer(w.late.note)}
        </p>
      ) : null}
      <ol class="timeline" aria-label="The job's walk">
        <li>
          <h2>
            <span class="step">1</span> Job <Status s="announced" />
          </h2>
          <p>
            <AddrLink a={w.job.address} overlay={ov} /> {w.job.record.workload}, at most {money(w.job.record.maxPrice)}, deadline {whenText(w.job.record.deadline, now)}; requirements <code>{JSON.stringify(w.job.record.requirements)}</code>
          </p>
        </li>
        <li>
          <h2>
            <span class="step">2</span> Offers <span class="count">({w.offers.length})</span>
          </h2>
          <ul>
            {w.offers.map((o) => (
              <li key={o.address}>
                <AddrLink a={o.address} overlay={ov} /> {o.held === false ? '(no longer held here)' : <>from <Did d={o.signer} /> at {money(o.record.price)}</>}
              </li>
            ))}
          </ul>
        </li>
        <li>
          <h2>
            <span class="step">3</span> Decision
          </h2>
          <Decision d={decision} />
        </li>
        <li>
          <h2>
            <span class="step">4</span> Selection {w.selections.length > 1 ? <span class="count">({w.selections.length} attempts: failover)</span> : null}
          </h2>
          <ol>
            {w.selections.map((s, i) => (
              <li key={s.address}>
                {i > 0 ? <strong>Failover attempt {i + 1}: </strong> : <>Attempt 1: </>}
                <AddrLink a={s.address} overlay={ov} /> policy {s.record.policy}, {/* an order's selection considers claims (QA qaOrd F6) */}
                {s.record.policy === 'first-claim' ? (
                  <>
                    winner claim <AddrLink a={s.record.winner} overlay={ov} /> of {plural((s.record.arrivals ?? s.record.considered).length, 'claim')} considered
                  </>
                ) : (
                  <>
                    winner offer <AddrLink a={s.record.winner} overlay={ov} /> of {s.record.considered.length} considered
                  </>
                )}
                {w.attemptNotes?.[s.address] ? <span class="attempt-ended">; no receipt, no non-delivery: {w.attemptNotes[s.address]!.message}</span> : null}
              </li>
            ))}
          </ol>
          {emptyStepNote('selection', state, w) ? <p class="none">{emptyStepNote('selection', state, w)}</p> : null}
          {events
            .filter((e) => e.e === 'failover')
            .map((e, i) => (
              <p key={i} class="failover">
                <Status s="failover" /> from <Did d={String(e.from)} />: {peer(e.reason)}
              </p>
            ))}
        </li>
        <li>
          <h2>
            <span class="step">5</span> Execution {done ? null : <Status s="running" />}
          </h2>
          {lastPermille !== undefined && !done ? <progress max={1000} value={lastPermille} aria-label="progress" /> : null}
          {note ? <p>{note}</p> : null}
          {omitted ? <p class="omitted">{omitted} earlier events omitted (the oldest progress first; the node keeps the last {RUN_LOG_EVENTS} of a run)</p> : null}
          <ul class="narration">
            {progress.map(({ e, key }) => (
              <Narration key={key} ev={e} />
            ))}
            {w.nondeliveries.map((n) => (
              <li key={n.address}>
                <Status s="non-delivery" /> by <Did d={n.record.provider} /> <AddrLink a={n.address} overlay={ov} />
              </li>
            ))}
          </ul>
        </li>
        <li>
          <h2>
            <span class="step">6</span> Receipt
          </h2>
          {emptyStepNote('receipt', state, w) ? <p class="none">{emptyStepNote('receipt', state, w)}</p> : null}
          <ul>
            {w.receipts.map((x) => (
              <li key={x.address}>
                <AddrLink a={x.address} overlay={ov} /> <Status s={x.record.status} /> by <Did d={x.record.provider} /> for offer <AddrLink a={x.record.offer} overlay={ov} />, {tookText({ ...x.record, failure: x.record.failure?.code })}
                {x.record.energy ? `, ${fmtJoules(x.record.energy.uj)} (${peer(x.record.energy.grade)})` : ''}
                {x.record.failure ? `: ${peer(x.record.failure.code)}` : ''}
                {x.address === w.late?.receipt ? ' (came after the run ended: no verdict signed)' : ''}
              </li>
            ))}
          </ul>
        </li>
        <li>
          <h2>
            <span class="step">7</span> Acceptance
          </h2>
          {emptyStepNote('acceptance', state, w) ? <p class="none">{emptyStepNote('acceptance', state, w)}</p> : null}
          <ul>
            {w.acceptances.map((a) => (
              <li key={a.address}>
                <AddrLink a={a.address} overlay={ov} /> <Verdict v={a.record.verdict} receiptStatus={w.receipts.find((x) => x.address === a.record.receipt)?.record.status} /> of receipt <AddrLink a={a.record.receipt} overlay={ov} />
                {a.record.reason ? `: ${peer(a.record.reason)}` : ''}
              </li>
            ))}
          </ul>
        </li>
      </ol>
    </>
  );
}

/** Step 3: the decision the run took (ranked, or why none was eligible), or that it is not known here; never the market now as the decision. */
function Decision({ d }: { d: DecisionView }) {
  if (d.kind === 'pending') return <p>not decided yet: the run is collecting offers</p>;
  if (d.kind === 'unknown') return <p class="why">{d.text}</p>;
  if (d.kind === 'none')
    return (
      <>
        <p>
          <Status s="no-eligible-provider" />: {peer(d.summary)}
        </p>
        {d.relaxations.length ? (
          <ul aria-label="What would make a provider eligible">
            {d.relaxations.map((t, i) => (
              <li key={i}>{peer(t)}</li>
            ))}
          </ul>
        ) : null}
        <Ineligible x={d.ineligible} />
      </>
    );
  return (
    <>
      {d.why ? <p class="why">Why the winner won: {peer(d.why)}</p> : null}
      <TableBox label="Eligible offers ranked (scrolls sideways on a narrow window)">
      <table>
        <caption>Eligible offers ranked by the policy</caption>
        <thead>
          <tr>
            <th scope="col">Rank</th>
            <th scope="col">Provider</th>
            <th scope="col">Price</th>
            <th scope="col">Quoted</th>
            <th scope="col">Score</th>
            <th scope="col">Parts</th>
          </tr>
        </thead>
        <tbody>
          {d.ranked.map((x) => (
            <tr key={x.offer}>
              <td>{x.rank}</td>
              <td>
                <Did d={x.provider} />
              </td>
              <td>{money(x.price)}</td>
              <td>{fmtDuration(x.durationMs)}</td>
              <td>{x.total.toFixed(3)}</td>
              <td>
                <small>{Object.entries(x.scores).map(([k, s]) => `${k} ${Number(s).toFixed(2)}`).join(', ')}</small>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      </TableBox>
      <Ineligible x={d.ineligible} />
    </>
  );
}

/** The providers that failed a gate, each with every failure, as `c0mpute run` prints them. */
export function Ineligible({ x }: { x: IneligibleLines }) {
  if (!x.lines.length) return null;
  return (
    <ul aria-label="Ineligible providers" class="ineligible">
      {x.lines.map((l, i) => (
        <li key={i}>{l}</li>
      ))}
      {x.more ? <li>… and {x.more} more</li> : null}
    </ul>
  );
}

/** One narration line; drawn once (a new event adds a line, it does not redraw the others). */
export class Narration extends Component<{ ev: Ev }> {
  override shouldComponentUpdate(next: { ev: Ev }): boolean {
    return next.ev !== this.props.ev;
  }
  override render() {
    return <li>{narrate(this.props.ev)}</li>;
  }
}
