/**
 * `c0mpute train buy run.yaml --providers N | --members did,…` (docs/training.md
 * "A training run bought as a gang"): hire a gang through the market and wait
 * for the final weights. Driven through the running daemon's routes: GET
 * /v1/market picks the members, the run is signed here with the node's key
 * (members put in from the pick), and one `train.member` job per member goes
 * through POST /v1/run (requirements.allowlist = that member), all at once.
 * Prints every member's receipt and the weights; exit 1 unless every member
 * completed and all report the same weights, the single-process run's
 * (`--no-reference` skips computing it). Each member job's params cite
 * the gang claim {claim: run address, member: index}. With `--entitlement`
 * (an overlay with a steward) the gang is first admitted as ONE pool/1 claim
 * through POST /v1/gang/admit (refused as a whole before any member job is
 * sent), every member job names it, and POST /v1/gang/release releases it at
 * the end with every member's receipt (docs/training.md "A gang on a
 * stewarded overlay").
 */
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { apiCall, apiStream } from '../../node/api-client.js';
import type { GangReport, MarketAdvert, MemberJobResult } from '../../roles/trainer/gang-buy.js';
import { NegativeAnswer, type Interrupted, out, outJson, readInput, UsageError, writeOutput, writingTo } from '../context.js';
import { interruptedBy, stopWord, watchCtrlC, type RunStopSignal } from '../run-interrupt.js';
import { printable } from '../../util/text.js';
import { DAEMON_STOPPING_CODES, daemonSideCode } from '../../matching/batch-run.js';
import { requireDaemon, overlayQuery as q } from '../daemon-client.js';
import { globals } from './index.js';
import type { Admission } from '../../roles/buyer.js';

/** The command's options as commander gives them (checkBuyFlags, train-buy-flags.ts, checks them). */
export interface BuyFlags {
  providers?: string;
  members?: string;
  workload: string;
  maxPrice: string;
  currency: string;
  deadline: string;
  out?: string;
  overlay?: string;
  json?: boolean;
  entitlement?: string;
  energy?: string;
  energyGrade: string;
  class?: string;
  devicesPerMember: string;
  reference: boolean;
}

export function registerBuy(train: Command): void {
  train
    .command('buy <runYaml>')
    .description('buy a training run as a gang: hire N providers from the market as its members, one member job each, and wait for the final weights')
    .option('--providers <n>', 'hire this many providers (live, offering the workload; best reputation first)')
    .option('--members <dids>', 'hire exactly these providers (comma-separated DIDs) instead')
    .option('--workload <name>', 'the member workload the providers sell', 'train.member')
    .option('--max-price <amount>', 'the most to pay each member', '0.01')
    .option('--currency <code>', 'currency of --max-price', 'USD')
    .option('--deadline <ms>', 'each member job’s deadline from now', '120000')
    .option('--out <file>', 'also write the signed run bundle here')
    .option('--overlay <name>', 'buy on this overlay (default: the node’s first)')
    .option('--entitlement <id>', 'on an overlay with a steward: admit the gang as one pool/1 claim under this entitlement first')
    .option('--energy <uj>', 'with --entitlement: the whole gang’s energy estimate in µJ')
    .option('--energy-grade <grade>', 'the grade of --energy (HwShunt, ModelBased, Estimator)', 'Estimator')
    .option('--class <name>', 'with --entitlement: the claim’s class (the steward derives an estimate from its history when --energy is absent)')
    .option('--devices-per-member <n>', 'with --entitlement: devices each member occupies', '1')
    .option('--no-reference', 'do not compute the single-process run to compare the agreed weights with (for a run too large to redo here)')
    .option('--json', 'machine-readable result')
    .action(async (runYaml: string, f: BuyFlags, cmd: Command) => {
      const { dataDir } = globals(cmd);
      (await import('./train-buy-flags.js')).checkBuyFlags(f);
      const [{ systemClock }, { buildRun, writeRunBundle, referenceFor }, { checkGang, pickMembers, withMembers }, { loadNodeIdentity }, { citeParams }] = await Promise.all([
        import('../../util/clock.js'),
        import('../../roles/trainer/run-file.js'),
        import('../../roles/trainer/gang-buy.js'),
        import('../signer.js'),
        import('../../roles/gang-cite.js'),
      ]);
      const client = requireDaemon(dataDir);
      let members: string[];
      if (f.members) members = f.members.split(',').map((s) => s.trim()).filter(Boolean);
      else if (f.providers) {
        const m = (await apiCall(client.api, client.token, 'GET', `/v1/market${q(f.overlay)}`)) as { adverts: MarketAdvert[] };
        members = pickMembers(m.adverts, f.workload, Number(f.providers));
      } else throw new UsageError('TRAIN_GANG_SIZE', 'name the gang: --providers <n> or --members <dids>', { field: 'providers' });
      const id = await loadNodeIdentity(dataDir);
      const { bundle, json } = buildRun(withMembers(new TextDecoder().decode(readInput(runYaml)), members), id.signer, systemClock());
      if (f.out) writingTo(f.out, () => writeRunBundle(f.out!, json));
      const runAddr = bundle.run.address;
      const order = bundle.run.record.members;
      if (!f.json) process.stderr.write(`▸ run ${runAddr}: ${order.length} members, buying one ${f.workload} job from each\n`);
      const input = Buffer.from(JSON.stringify({ run: (JSON.parse(json) as { run: string }).run })).toString('base64');
      const deadlineMs = Number(f.deadline);
      // Ctrl-C (docs/node.md "A run whose client went away"): no member job is sent after it, the streams in flight
      // close (the daemon withdraws a member job no provider was selected for yet, a selected one runs to its end), the
      // gang's claim is released with the receipts so far, and one line says what was done (exit 130); a second exits
      // at once.
      const ctrlC = watchCtrlC();
      try {
        await buyGang(ctrlC.signal, ctrlC.by);
      } finally {
        ctrlC.dispose();
      }
      async function buyGang(interrupted: AbortSignal, by: () => RunStopSignal | undefined): Promise<void> {
        /** Release the gang's one claim with these member receipts (the daemon asks the steward, 30 s at most: releaseGang). */
        const release = (receipts: string[]) =>
          (apiCall(client.api, client.token, 'POST', `/v1/gang/release${q(f.overlay)}`, { claim: runAddr, receipts }, { workMs: 30_000 }) as Promise<{ released: string }>).catch(() => ({ released: 'unknown' }));
        let admission: Admission | undefined;
        if (f.entitlement) {
          // One claim for the whole gang, decided before any member job is sent; its deadline leaves room for the member jobs' own.
          const body = {
            run: (JSON.parse(json) as { run: string }).run,
            entitlement: f.entitlement,
            ...(f.energy === undefined ? {} : { energy: { uj: Number(f.energy), grade: f.energyGrade } }),
            ...(f.class ? { class: f.class } : {}),
            devicesPerMember: Number(f.devicesPerMember),
            deadlineMs: deadlineMs + 60_000,
          };
          // the daemon asks the steward again while no verdict is heard (a silent steward: GANG_REASK_MS), up to the
          // claim's deadline: wait that long too, or until a Ctrl-C, which withdraws the claim (asked, or admitted
          // meanwhile) before the command ends
          const admitting = apiCall(client.api, client.token, 'POST', `/v1/gang/admit${q(f.overlay)}`, body, { workMs: body.deadlineMs }) as Promise<{ admission: Admission }>;
          const ctrlC = new Promise<'ctrl-c'>((resolve) => (interrupted.aborted ? resolve('ctrl-c') : interrupted.addEventListener('abort', () => resolve('ctrl-c'), { once: true })));
          const first = await Promise.race([admitting, ctrlC]);
          if (first === 'ctrl-c') {
            admitting.catch(() => {}); // its answer no longer matters
            const rel = await release([]);
            throw interruptedBy(by(), 'TRAIN_GANG_INTERRUPTED', `gang ${runAddr} interrupted with ${stopWord(by())} while the steward decided its claim: no member job was sent, and the claim was withdrawn (steward: ${rel.released})`);
          }
          admission = first.admission;
          if (!f.json) process.stderr.write(`▸ gang claim ${runAddr} under ${f.entitlement}: ${admission.verdict}${admission.reason ? ` (${printable(admission.reason)})` : ''}${admission.reserved ? `, ${admission.reserved.uj} µJ reserved (${admission.reserved.grade})` : ''}\n`);
          if (admission.verdict !== 'Admit') {
            if (f.json) outJson({ run: runAddr, ok: false, admission, members: [] });
            throw gangRefused(admission, order.length);
          }
        }
        /** The daemon lost under a member job's stream, or stopping (daemonSideCode; a member job it broke off): the first such error. */
        let lost: { code: string; message: string } | undefined;
        /** What each member job's stream said before a Ctrl-C: whether its provider was selected (the run committed). */
        const selected = new Set<number>();
        const buyOne = async (did: string, member: number): Promise<MemberJobResult> => {
          if (interrupted.aborted) return { status: 'not-sent', attempts: [{ provider: did, outcome: `not sent: ${stopWord(by())} came first` }] };
          const gang = { claim: runAddr, member };
          const spec = { workload: f.workload, maxPrice: { amount: f.maxPrice, currency: f.currency }, deadlineMs, timeoutMs: Math.max(1_000, deadlineMs - 10_000), requirements: { allowlist: [did] }, input, params: citeParams(gang), ...(f.entitlement ? { entitlement: f.entitlement, gang } : {}) };
          try {
            for await (const ev of apiStream(client.api, client.token, `/v1/run${q(f.overlay)}`, spec, { signal: interrupted })) {
              if (ev.e === 'selection') selected.add(member);
              if (ev.e === 'result') {
                const r = ev.result as MemberJobResult & { error?: { code?: string; message?: string } };
                // broken off by the daemon's own stop (JOB_INTERRUPTED) with no Ctrl-C here: the daemon's side, said as its code
                if (r.status === 'interrupted' && !interrupted.aborted) lost ??= { code: r.error?.code ?? 'JOB_INTERRUPTED', message: r.error?.message ?? 'the daemon broke the member job off as it stopped' };
                return r;
              }
              if (ev.e === 'error') {
                const err = ev.error as { code: string; message: string };
                // the daemon refusing new runs as it stops (JOB_INTERRUPTED): its side, as a lost daemon is
                if (DAEMON_STOPPING_CODES.has(err.code)) lost ??= { code: err.code, message: err.message };
                return { status: 'error', attempts: [{ provider: did, outcome: `${err.code}: ${err.message}` }] };
              }
            }
          } catch (e) {
            if (interrupted.aborted) {
              const at = stopWord(by());
              const outcome = selected.has(member) ? `in flight at ${at} with its provider selected: it runs to its end and is paid for` : `in flight at ${at} before a provider was selected: the daemon withdraws it`;
              return { status: 'interrupted', attempts: [{ provider: did, outcome }] };
            }
            // the daemon itself lost (it died, restarted, stopped answering): the buyer's side, not this member's; the
            // command ends with the daemon's code below (gangEnd), as `run` and `batch run` do
            const code = (e as C0Error).code;
            if (daemonSideCode(e) !== undefined) lost ??= { code, message: (e as Error).message };
            // refused before the run started (the daemon answers a bad spec as an HTTP error): this member failed, and the
            // gang's claim is still released below
            return { status: 'error', attempts: [{ provider: did, outcome: `${code ?? 'ERROR'}: ${(e as Error).message}` }] };
          }
          return { status: 'error', attempts: [{ provider: did, outcome: 'the daemon ended the run without a result' }] };
        };
        const results = await Promise.all(order.map(buyOne));
        const stopped = interrupted.aborted;
        // the same spec in one process: what every member must have reached, unless one fed the all-reduce something
        // other than its gradient (not worked out for a gang broken off)
        const reference = f.reference && !stopped ? referenceFor(bundle.run.record).weights : undefined;
        const report: GangReport & { admission?: Admission; released?: string; interrupted?: true } = checkGang(runAddr, order, results, reference);
        if (admission) {
          // Release the one claim now with every member's receipt (the steward may have released it already, on the last
          // receipt); after a Ctrl-C with the receipts so far, else the steward holds the reservation to its deadline.
          const receipts = report.members.map((m) => m.receipt).filter((x): x is string => x !== undefined);
          // the daemon asks the steward first, with a 30 s deadline (releaseGang, src/node/gang-routes.ts)
          const rel = await release(receipts);
          Object.assign(report, { admission, released: rel.released });
        }
        if (stopped) report.interrupted = true;
        if (f.out) writeOutput(f.out + '.result.json', JSON.stringify(report, null, 2) + '\n');
        if (f.json) outJson(report);
        if (stopped) {
          // of the member jobs in flight at the Ctrl-C, those whose provider was selected (a finished one was selected too)
          const committed = results.filter((r, i) => r.status === 'interrupted' && selected.has(i)).length;
          throw gangInterrupted(report, committed, f.out ? `${f.out}.result.json` : undefined, by());
        }
        if (!f.json) {
          for (const m of report.members) out(`member ${m.did}: ${m.status}${m.receipt ? `, receipt ${m.receipt}` : ''}${m.energy ? `, energy ${m.energy.uj} µJ (${m.energy.grade})` : ''}${m.weights ? `, weights ${m.weights}` : ''}${m.problem ? ` ✘ ${m.problem}` : ''}`);
          if (report.ok) out(`weights ${report.weights!} (all ${report.members.length} members agree${report.reference ? ', and the single-process run reaches the same' : ''})`);
        }
        const end = gangEnd(report, lost, f.out ? `${f.out}.result.json` : undefined);
        if (end) throw end;
      }
    });
}

/**
 * The line a Ctrl-C ends `train buy` with (exit 130; SIGTERM 143, SIGHUP 129, `by`): the member jobs done, those in flight (their streams closed:
 * `committed` of those in flight had a provider selected, so they run to their end and are paid for; the daemon withdraws the
 * rest), those not sent, the claim's release, and where the per-member report is.
 */
export function gangInterrupted(report: GangReport & { admission?: Admission; released?: string }, committed: number, file: string | undefined, by?: RunStopSignal): Interrupted {
  const n = report.members.length;
  const done = report.members.filter((m) => m.status === 'completed').length;
  const inFlight = report.members.filter((m) => m.status === 'interrupted').length;
  const notSent = report.members.filter((m) => m.status === 'not-sent').length;
  const receipts = report.members.filter((m) => m.receipt !== undefined).length;
  const flight = inFlight ? `; ${inFlight} in flight, their streams closed (${committed} with a provider already selected run to their end and are paid for; the daemon withdraws the others)` : '';
  const claim = report.admission ? `; the gang's claim was released with the ${receipts} receipt${receipts === 1 ? '' : 's'} so far (steward: ${report.released ?? 'unknown'})` : '';
  return interruptedBy(
    by,
    'TRAIN_GANG_INTERRUPTED',
    `gang ${report.run} interrupted with ${stopWord(by)}: ${done} of ${n} member jobs done${flight}${notSent ? `; ${notSent} not sent` : ''}${claim}. Per member: ${file ?? 'the receipts in `c0mpute jobs`'}`,
  );
}

/**
 * A gang the steward did not admit: a negative answer (exit 1, docs/training.md "A gang on a stewarded overlay"),
 * printed as `error TRAIN_GANG_REFUSED: …` with the verdict and its reason. Before (QA ffGang F3) it was an operator
 * error, exit 3, while the docs said 1.
 */
export function gangRefused(admission: Admission, members: number): NegativeAnswer {
  return new NegativeAnswer([`error TRAIN_GANG_REFUSED: the steward did not admit the gang of ${members}: ${admission.verdict}${admission.reason ? ` ${printable(admission.reason)}` : ''}`], 'stderr');
}

/**
 * How `train buy` ends once every member job has ended (undefined: all completed and agree, exit 0). The daemon lost
 * under a member job's stream (`lost`: DAEMON_STREAM_LOST, …) is the daemon's error, exit 3, as `run` and `batch run`
 * end: the member jobs may still be running there or have been broken off, `c0mpute jobs` says which. Else a negative
 * answer (exit 1) naming each member that did not complete and why, or saying the members disagree, or that the
 * agreed weights are not the single-process run's. Before (QA ffGang F4, F7) every case read `✘ the gang did not
 * finish with one set of weights` (exit 1), also when its daemon had died and when the members that finished agreed
 * but one had failed.
 */
export function gangEnd(report: GangReport, lost: { code: string; message: string } | undefined, file: string | undefined): C0Error | NegativeAnswer | undefined {
  if (report.ok) return undefined;
  const per = file ?? 'the receipts in `c0mpute jobs`';
  if (lost) {
    const done = report.members.filter((m) => m.status === 'completed').length;
    const what = DAEMON_STOPPING_CODES.has(lost.code) ? 'its daemon is stopping' : 'train buy lost its daemon';
    return new C0Error(lost.code, `${what}: ${lost.message}. ${done} of ${report.members.length} member jobs completed; the others' outcome is not known here (\`c0mpute jobs\` once the daemon is back: a restarted buyer withdraws the gang's claim at its start). Per member: ${per}`);
  }
  const notDone = report.members.filter((m) => m.status !== 'completed' || !m.weights);
  if (notDone.length) {
    const said = notDone.slice(0, 8).map((m) => `${m.did} ${m.status}${m.problem ? ` (${m.problem})` : ''}`).join('; ');
    return new NegativeAnswer([`✘ ${notDone.length} of ${report.members.length} members did not complete: ${said}${notDone.length > 8 ? `; +${notDone.length - 8} more` : ''}`], 'stderr');
  }
  if (report.weights === undefined) return new NegativeAnswer([`✘ the gang did not finish with one set of weights: the members disagree on the final weights`], 'stderr');
  return new NegativeAnswer([`✘ the members agree on ${report.weights}, but the single-process run reaches ${report.reference ?? '(not computed)'}: some member's contribution was not its work`], 'stderr');
}
