/**
 * Run a job: a form for the job file's fields, or the job file pasted as YAML.
 * Either way the daemon receives job-file text (/v1/console/run) and applies
 * the same checks as `c0mpute run job.yaml`, then streams the narration here.
 */
import { useState } from 'preact/hooks';
import { ApiError, CONNECTION_LOST, peer, plural, postStream, useFeedState, useJson, useLiveVersion, useRunEvents } from '../lib.js';
import { AddrLink, ErrorBox, Status } from '../parts.js';
import { Ineligible, Narration } from './jobs.js';
import { decisionView } from '../job-walk.js';
import { runFailureLines } from '../../src/util/run-failure.js';
import { RUN_LOG_EVENTS } from '../../src/util/run-log.js';
import { energyUj } from '../format.js';

const POLICIES = ['balanced', 'cheapest', 'fastest', 'trusted', 'private'];
const TIERS = ['', 'community', 'standard', 'verified', 'private', 'enterprise'];

export const EXAMPLE_YAML = `workload: builtin.sha256
params: 100000
maxPrice: 0.01 USD
deadline: 60s
input: hello from the console
requirements:
  memoryMiB: 4096
`;

type Ev = Record<string, unknown> & { e: string };

interface Form {
  workload: string;
  params: string;
  input: string;
  maxPrice: string;
  deadline: string;
  policy: string;
  memoryMiB: string;
  cpuCores: string;
  regions: string;
  tier: string;
  entitlement: string;
  cls: string;
  energyJ: string;
}

const INITIAL: Form = { workload: 'builtin.sha256', params: '100000', input: 'hello from the console', maxPrice: '0.01 USD', deadline: '60s', policy: '', memoryMiB: '', cpuCores: '', regions: '', tier: '', entitlement: '', cls: '', energyJ: '' };

/** The form as job-file text (JSON is YAML): blank fields are left out, so the daemon's defaults and checks apply. */
export function formToJobFile(f: Form): string {
  const num = (s: string) => (/^[0-9]+$/.test(s.trim()) ? Number(s.trim()) : s.trim());
  const req: Record<string, unknown> = {};
  if (f.memoryMiB.trim()) req.memoryMiB = num(f.memoryMiB);
  if (f.cpuCores.trim()) req.cpuCores = num(f.cpuCores);
  if (f.regions.trim()) req.regions = f.regions.split(',').map((r) => r.trim()).filter(Boolean);
  if (f.tier) req.tier = f.tier;
  const job: Record<string, unknown> = {
    workload: f.workload.trim(),
    ...(f.params.trim() ? { params: f.params.trim() } : {}),
    maxPrice: f.maxPrice.trim(),
    deadline: num(f.deadline),
    ...(f.policy ? { policy: f.policy } : {}),
    ...(f.input ? { input: f.input } : {}),
    ...(Object.keys(req).length ? { requirements: req } : {}),
    ...(f.entitlement.trim() ? { entitlement: f.entitlement.trim() } : {}),
    ...(f.cls.trim() ? { class: f.cls.trim() } : {}),
    ...(f.energyJ.trim() ? { energy: { uj: energyUj(f.energyJ), grade: 'Estimator' } } : {}),
  };
  return JSON.stringify(job, null, 2);
}

export function RunJob() {
  const ovs = useJson<{ primary: string; overlays: Array<{ name: string; roles: string[] }> }>('/v1/console/overview');
  const running = useJson<{ running: Array<{ run: number; job?: string }> }>('/v1/console/jobs', useLiveVersion((e) => e.type === 'job', 2000));
  const [mode, setMode] = useState<'form' | 'yaml'>('form');
  const [form, setForm] = useState<Form>(INITIAL);
  const [yaml, setYaml] = useState(EXAMPLE_YAML);
  const [overlay, setOverlay] = useState('');
  // bounded as the daemon bounds a run's log (src/util/run-log.ts): a long job's progress does not pile up in the tab
  const events = useRunEvents<Ev>('run');
  const [job, setJob] = useState<string | undefined>(undefined);
  const [result, setResult] = useState<Record<string, unknown> | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  // the live feed's word on the node: stale while the node sends nothing at all (stalled, or gone without a word)
  const feed = useFeedState();
  const buyerOverlays = (ovs.data?.overlays ?? []).filter((o) => o.roles.includes('buyer'));

  const field = (k: keyof Form, label: string, hint?: string) => (
    <label class="field">
      <span>{label}</span>
      <input type="text" name={k} value={form[k]} onInput={(e) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value })} aria-describedby={hint ? `${k}-hint` : undefined} />
      {hint ? (
        <small id={`${k}-hint`} class="hint">
          {hint}
        </small>
      ) : null}
    </label>
  );

  const submit = async (e: Event) => {
    e.preventDefault();
    events.clear();
    setJob(undefined);
    setResult(undefined);
    setError(undefined);
    setBusy(true);
    try {
      const text = mode === 'form' ? formToJobFile(form) : yaml;
      await postStream(`/v1/console/run${overlay ? `?overlay=${encodeURIComponent(overlay)}` : ''}`, { yaml: text }, (ev) => {
        if (ev.e === 'result') setResult(ev.result as Record<string, unknown>);
        else if (ev.e === 'error') {
          const err = ev.error as { code: string; message: string };
          setError(new ApiError(err.code, err.message, 200));
        } else {
          if (ev.e === 'job') setJob((ev.job as { address: string }).address);
          events.push(ev as Ev);
        }
      });
    } catch (x) {
      setError(x instanceof ApiError ? x : new ApiError('ERROR', String(x), 0));
    } finally {
      setBusy(false);
    }
  };
  const jobLink = job ? `#/jobs/${encodeURIComponent(job)}${overlay ? `/${encodeURIComponent(overlay)}` : ''}` : undefined;
  // runs the node has going that this page did not start (a reload mid-job forgot its run: QA s49): linked, not lost
  const elsewhere = !busy && !job ? (running.data?.running ?? []) : [];
  return (
    <>
      <h1 tabIndex={-1}>Run a job</h1>
      {elsewhere.length ? (
        <p class="explain" role="status" id="running-elsewhere">
          This node is running {plural(elsewhere.length, 'job')} now, started before this page was loaded or from another tab:{' '}
          {elsewhere.map((x, i) => (
            <span key={x.run}>
              {i ? ', ' : ''}
              {x.job ? <a href={`#/jobs/${encodeURIComponent(x.job)}`}>job {x.job.slice(7, 15)}…</a> : `run ${x.run} (not yet announced)`}
            </span>
          ))}
          . <a href="#/jobs">Jobs</a> lists them under Running now.
        </p>
      ) : null}
      {/* a node without the buyer role gets no form that can only end ROLE_NOT_ENABLED (QA qaCon F9) */}
      {buyerOverlays.length === 0 && ovs.data ? (
        <p class="error" id="run-no-buyer">
          This node is not a buyer on any overlay (its roles: {(ovs.data.overlays.flatMap((o) => o.roles).filter((r, i, a) => a.indexOf(r) === i).join(', ')) || 'none'}), so it cannot run jobs: add <code>buyer</code> to its roles
          (the node's config) and restart it to run jobs here.
        </p>
      ) : null}
      {buyerOverlays.length === 0 && ovs.data ? null : (
      <form onSubmit={submit} aria-describedby="run-help">
        <p id="run-help">The same checks as <code>c0mpute run job.yaml</code>: the daemon reads what you send as a job file.</p>
        <fieldset class="mode">
          <legend>Describe the job with</legend>
          <label class="check">
            <input type="radio" name="mode" checked={mode === 'form'} onChange={() => setMode('form')} /> the form
          </label>
          <label class="check">
            <input type="radio" name="mode" checked={mode === 'yaml'} onChange={() => setMode('yaml')} /> a job file (YAML)
          </label>
        </fieldset>
        {buyerOverlays.length > 1 ? (
          <label class="field">
            <span>Overlay</span>
            <select value={overlay} onChange={(e) => setOverlay((e.target as HTMLSelectElement).value)}>
              {buyerOverlays.map((o) => (
                <option key={o.name} value={o.name === ovs.data!.primary ? '' : o.name}>
                  {o.name}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        {mode === 'form' ? (
          <div class="form-grid">
            {field('workload', 'Workload', 'a namespace such as builtin.sha256')}
            {field('params', 'Parameters', 'for builtin.sha256: the number of rounds')}
            <label class="field wide">
              <span>Input</span>
              <textarea name="input" rows={3} value={form.input} onInput={(e) => setForm({ ...form, input: (e.target as HTMLTextAreaElement).value })} />
            </label>
            {field('maxPrice', 'Maximum price', 'like 0.01 USD')}
            {field('deadline', 'Deadline', 'like 90s, 5m or milliseconds')}
            <label class="field">
              <span>Policy</span>
              <select name="policy" value={form.policy} onChange={(e) => setForm({ ...form, policy: (e.target as HTMLSelectElement).value })}>
                <option value="">the node's default</option>
                {POLICIES.map((p) => (
                  <option key={p}>{p}</option>
                ))}
              </select>
            </label>
            {field('memoryMiB', 'Memory (MiB) at least')}
            {field('cpuCores', 'CPU cores at least')}
            {field('regions', 'Regions', 'comma-separated, e.g. eu-west, us-east')}
            <label class="field">
              <span>Trust tier</span>
              <select name="tier" value={form.tier} onChange={(e) => setForm({ ...form, tier: (e.target as HTMLSelectElement).value })}>
                {TIERS.map((t) => (
                  <option key={t} value={t}>
                    {t || 'any'}
                  </option>
                ))}
              </select>
            </label>
            {field('entitlement', 'Entitlement', 'on an overlay with a steward: the team it runs under')}
            {field('cls', 'Class', 'the job class (steward overlays)')}
            {field('energyJ', 'Energy estimate (J)', 'steward overlays: the estimate admitted against the budget')}
          </div>
        ) : (
          <label class="field wide">
            <span>Job file</span>
            <textarea name="yaml" rows={12} spellcheck={false} value={yaml} onInput={(e) => setYaml((e.target as HTMLTextAreaElement).value)} />
          </label>
        )}
        <p>
          <button type="submit" id="run-submit" class="primary" disabled={busy || !ovs.data}>
            {busy ? 'Running…' : 'Run the job'}
          </button>
        </p>
      </form>
      )}
      {busy && feed === 'stale' ? (
        <p class="error" role="status" id="run-stale">
          The node has sent nothing for a while (the live feed is reconnecting): it may be stalled or gone. A job it started goes on there as long as
          the node does; its outcome will be on the <a href={jobLink ?? '#/jobs'}>{jobLink ? "job's page" : 'Jobs page'}</a>.
        </p>
      ) : null}
      <ErrorBox error={error} />
      {error?.code === CONNECTION_LOST ? (
        <p id="run-lost">
          <a href={jobLink ?? '#/jobs'}>{jobLink ? "The job's page" : 'The Jobs page'}</a> shows how it ended once the node is back.
        </p>
      ) : null}
      {events.log.events.length || result ? (
        <section aria-labelledby="narration" aria-live="polite">
          <h2 id="narration">Progress</h2>
          {jobLink ? (
            <p>
              Job <AddrLink a={job} overlay={overlay || undefined} /> · <a href={jobLink}>open its timeline</a>
            </p>
          ) : null}
          {events.log.omitted ? <p class="omitted">{events.log.omitted} earlier events omitted (the oldest progress first; the page keeps the last {RUN_LOG_EVENTS}, as the node does)</p> : null}
          <ol class="narration">
            {events.log.events.map((e, i) => (
              <Narration key={events.log.seqs[i]} ev={e} />
            ))}
          </ol>
          {result ? (
            <p class="result" id="run-result">
              Result: <Status s={String(result.status)} />
              {jobLink ? (
                <>
                  {' '}
                  · <a href={jobLink}>see the job's walk</a>
                </>
              ) : null}
            </p>
          ) : null}
          {result && result.status !== 'completed' ? <RunFailure result={result} events={events.log.events} /> : null}
        </section>
      ) : null}
    </>
  );
}

/**
 * Why a run did not complete, as `c0mpute run` ends it (src/util/run-failure.ts, shared): the attempts with their codes,
 * or why no provider was eligible with what would widen the market, each provider that failed a gate with its codes
 * (the run's decision event, as a job's page lists them), a steward's refusal, a run broken off. QA qaCon F3: the page
 * ended with "Result: ✗ failed" or "✗ no-offers" alone.
 */
function RunFailure({ result, events }: { result: Record<string, unknown>; events: readonly Ev[] }) {
  // a steward's verdict the narration said already (its admission event) is not said twice, as in the CLI
  const lines = runFailureLines(result, { verdictSaid: events.some((e) => e.e === 'admission' || e.e === 'queued') });
  const decision = decisionView(events, 'ended', { summary: '', providers: [] });
  return (
    <div class="run-failure" id="run-failure">
      <ul>
        {lines.map((l, i) => (
          <li key={i}>{peer(l)}</li>
        ))}
      </ul>
      {decision.kind === 'none' ? <Ineligible x={decision.ineligible} /> : null}
    </div>
  );
}
