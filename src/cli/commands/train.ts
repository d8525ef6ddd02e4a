/**
 * `c0mpute train start|buy|join|status|verify` (docs/training.md): sign a run from
 * run.yaml, take part in it as a worker process, show its state, and check a
 * step commitment's inclusion in a committed epoch; `stage` serves one pipeline
 * stage and `infer` drives a pipeline of them (train-infer.ts).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import type { TrainerEvent } from '../../roles/trainer/worker.js';
import type { VerifyResult } from '../../training/verify.js';
import type { StatusFileView } from '../../roles/trainer/status.js';
import { NegativeAnswer, out, outJson, readInput, UsageError, writingTo } from '../context.js';
import { globals } from './index.js';
import { registerBuy } from './train-buy.js';
import { parseLayers, registerInfer } from './train-infer.js';

export function runDir(dataDir: string, runAddr: string): string {
  return join(dataDir, 'train', runAddr.slice('sha256:'.length, 'sha256:'.length + 16));
}

/** The run directories under `base` (<data dir>/train/): named by 16 hex digits of the run's address (runDir); other entries are no run. */
function runsHeld(base: string): string[] {
  return existsSync(base) ? readdirSync(base, { withFileTypes: true }).filter((d) => d.isDirectory() && /^[0-9a-f]{16}$/.test(d.name)).map((d) => d.name).sort() : [];
}

/**
 * `train status <run>` naming a run this node holds rather than its bundle (a provider's operator has no bundle: it is
 * the buyer's file): its address (`sha256:` and 64 hex digits) or its directory name, or a prefix of either of at
 * least 4 hex digits. Undefined when the text is not such a name (a bundle's path), or is a file; a name that matches
 * no run, or several, is TRAIN_RUN_UNKNOWN listing them. QA ffTrainDay2 F3: a provider with two runs could not show either.
 */
function runById(text: string, held: string[], base: string): string | undefined {
  // a bundle's path is a file; a run's directory, here or under `train/`, is named by its name (review s56)
  if (existsSync(text) && statSync(text).isFile()) return undefined;
  const m = /^(?:sha256:)?([0-9a-f]{4,64})$/.exec(text);
  if (!m) return undefined;
  const hex = m[1]!;
  // more than a directory name's 16 digits: the rest must agree with the run's address its status holds (one pruned,
  // with no status, on its directory name alone); before (review s56) only the first 16 were compared
  const agrees = (d: string) => {
    if (hex.length <= 16) return d.startsWith(hex);
    if (!hex.startsWith(d)) return false;
    try {
      const run = (JSON.parse(readFileSync(join(base, d, 'status.json'), 'utf8')) as { run?: unknown }).run;
      return typeof run !== 'string' || run.replace(/^sha256:/, '').startsWith(hex);
    } catch {
      return true;
    }
  };
  const hits = held.filter(agrees);
  if (hits.length === 1) return hits[0];
  throw new C0Error('TRAIN_RUN_UNKNOWN', hits.length ? `${text} names ${hits.length} runs here (${hits.join(', ')}): give more of its address` : `no run ${text} in this data directory${held.length ? ` (runs here: ${held.slice(0, 20).join(', ')}${held.length > 20 ? `, and ${held.length - 20} more` : ''})` : ''}`, { field: 'run', detail: { runs: hits.length ? hits : held } });
}

/** Several runs and none named: TRAIN_RUN_UNKNOWN listing each (directory, name, state) so the operator can name one. */
function severalRuns(base: string, held: string[], readMark: (dir: string) => { prunedAt?: number } | undefined): C0Error {
  const runs = held.map((d) => {
    try {
      const s = JSON.parse(readFileSync(join(base, d, 'status.json'), 'utf8')) as { run?: unknown; name?: unknown; status?: unknown };
      return { dir: d, ...(typeof s.run === 'string' ? { run: s.run } : {}), ...(typeof s.name === 'string' ? { name: s.name } : {}), ...(typeof s.status === 'string' ? { status: s.status } : {}) };
    } catch {
      return { dir: d, ...(readMark(join(base, d))?.prunedAt !== undefined ? { status: 'pruned' } : {}) };
    }
  });
  const shown = runs.slice(0, 20).map((r) => `${r.dir}${r.name !== undefined || r.status !== undefined ? ` (${[r.name, r.status].filter((x) => x !== undefined).join(', ')})` : ''}`);
  return new C0Error('TRAIN_RUN_UNKNOWN', `several runs here: ${shown.join(', ')}${runs.length > 20 ? `, and ${runs.length - 20} more` : ''}; name one: \`train status <directory name or run address>\`, or its run bundle`, { field: 'run', detail: { runs } });
}


function short(s: string): string {
  return s.startsWith('did:') ? `${s.slice(0, 14)}…${s.slice(-6)}` : s.startsWith('sha256:') ? s.slice(0, 19) + '…' : s;
}

/** Why a run that changed view ends with other weights than `train reference` (QA qaTrn F6: nothing said so). */
const VIEW_NOTE = 'the survivors redid the epochs after the drop on fewer shards: `train reference`, the run with every member, gives other weights';

/** A view change, as `train status` and `train join` show it. */
function viewLine(v: { view: number; dropped: string[]; cause: string; silent?: string; members: string[]; resumeEpoch: number }): string {
  return `membership view ${v.view}: dropped ${v.dropped.map(short).join(', ') || 'nobody'} (${v.cause}${v.silent ? `, ${short(v.silent)} did not deliver` : ''}); resuming ${v.members.length} members from epoch ${v.resumeEpoch}`;
}

/**
 * Why a run stopped: its code, and the worker's own beside it when the node's recovery put the job's receipt's code
 * first (run-dirs.ts: the node was killed after the worker stopped the run and before the receipt was signed).
 */
function stopText(r: StatusFileView['stopReason'] & object): string {
  const worker = r.worker?.code;
  return typeof worker === 'string' && worker !== r.code ? `${r.code}; the worker had stopped it with ${worker}` : r.code;
}

/**
 * `train status` as text (src/roles/trainer/status.ts StatusFileView): state, steps, each member's counted
 * commitments, every view change with its cause, the committed epochs, the weights, and, after a view change, why
 * they differ from `train reference`. Before (QA qaTrn F6), the view changes were in `--json` only.
 */
export function statusLines(s: StatusFileView, gone: number | undefined): string[] {
  const lines: string[] = [];
  const last = s.losses[s.losses.length - 1];
  const state = gone === undefined ? s.status : `interrupted (status.json says ${s.status}, but its worker process ${gone} is gone)`;
  lines.push(`run ${s.run} (${s.name}): ${state}${s.stopReason ? ` (${stopText(s.stopReason)})` : ''}, view ${s.view}`);
  // `step` is the last step's index (0-based, -1 before the first): a finished run of 30 read 'step 29/30'
  lines.push(`steps done ${String(s.step + 1)}/${String(s.totalSteps)}, loss ${last ? last.loss.toFixed(4) : '-'}, ${Number(s.stepsPerSec).toFixed(1)} steps/s${s.accuracy !== undefined ? `, held-out accuracy ${(Number(s.accuracy) * 100).toFixed(1)} % (baseline ${(Number(s.baseline) * 100).toFixed(1)} %)` : ''}`);
  for (const [m, n] of Object.entries(s.contributions)) lines.push(`  member ${m}: ${n} step commitments counted`);
  for (const v of s.views ?? []) lines.push(`  ${viewLine(v)}`);
  // status.json lists the last epochs (STATUS_EPOCHS); the others are counted, each in epochs/<e>.json
  const earlier = (s.epochsCommitted ?? s.epochs.length) - s.epochs.length;
  if (earlier > 0) lines.push(`  ${earlier} earlier epoch${earlier === 1 ? '' : 's'} committed (each in epochs/<epoch>.json of the run's directory)`);
  for (const e of s.epochs) lines.push(`  epoch ${e.epoch}: root ${e.root}, coordinator ${short(e.coordinator)}, ${e.witnesses.length} ${e.witnesses.length === 1 ? 'witness' : 'witnesses'}`);
  if (s.ignored.count) lines.push(`  ignored step commitments: ${s.ignored.count}`);
  lines.push(`weights ${String(s.weights)}${(s.views ?? []).some((v) => v.dropped.length) ? ` (${VIEW_NOTE})` : ''}`);
  return lines;
}

export function describeEvent(e: TrainerEvent): string {
  switch (e.e) {
    case 'joined':
      return `joined: ${e.members.length} members countersigned`;
    case 'step':
      return `step ${e.step} epoch ${e.epoch} loss ${e.loss.toFixed(4)} (${e.stepsPerSec.toFixed(1)} steps/s)`;
    case 'epoch':
      return `epoch ${e.epoch} committed: root ${e.root} by ${short(e.coordinator)}, witnessed by ${e.witnesses.length} (${e.witnesses.map(short).join(', ')})`;
    case 'view':
      return viewLine(e);
    case 'ignored':
      return `ignored a step commitment from ${short(e.from)}${e.step !== undefined ? ` for step ${e.step}` : ''}: ${e.code}${e.unshown ? ` (and ${e.unshown} more before it not shown)` : ''}`;
    case 'done':
      return `done: weights ${e.weights}, held-out accuracy ${(e.accuracy * 100).toFixed(1)} % (majority baseline ${(e.baseline * 100).toFixed(1)} %)${e.dropped?.length ? `, in view ${e.view ?? '?'} without ${e.dropped.map(short).join(', ')} (${VIEW_NOTE})` : ''}`;
    case 'stopped':
      return `stopped: ${e.code}: ${e.message}`;
  }
}

/** A warning of a command that goes on: `warning CODE: message` on stderr, as the CLI's other warnings. */
function warn(code: string, message: string): void {
  process.stderr.write(`warning ${code}: ${message}\n`);
}

/** A stage's --next dialled at its start: undefined when it answered, else why not (its code and message), within `timeoutMs`. */
export async function dialNext(net: { dial(addr: string, o?: { timeoutMs?: number }): Promise<unknown> }, addr: string, timeoutMs = 10_000): Promise<string | undefined> {
  try {
    await net.dial(addr, { timeoutMs });
    return undefined;
  } catch (e) {
    return (e instanceof C0Error ? `${e.code}: ${e.message}` : (e as Error).message).slice(0, 300);
  }
}

export function register(program: Command): void {
  const train = program.command('train').description('data-parallel training over libp2p: signed runs, quantised ring all-reduce, witnessed epoch roots');
  train
    .command('start <runYaml>')
    .description('sign a run spec from run.yaml with this node’s key and write the run bundle the members join')
    .option('--out <file>', 'where to write the bundle (default: <runYaml minus .yaml>.run.json)')
    .action(async (runYaml: string, opts: { out?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const [{ loadNodeIdentity }, { buildRun, writeRunBundle }, { systemClock }] = await Promise.all([import('../signer.js'), import('../../roles/trainer/run-file.js'), import('../../util/clock.js')]);
      const id = await loadNodeIdentity(dataDir);
      const { bundle, json } = buildRun(new TextDecoder().decode(readInput(runYaml)), id.signer, systemClock());
      const path = opts.out ?? runYaml.replace(/\.ya?ml$/, '') + '.run.json';
      writingTo(path, () => writeRunBundle(path, json));
      out(`run ${bundle.run.address} (${bundle.run.record.name}): ${bundle.run.record.members.length} members, ${bundle.run.record.epochs} epochs × ${bundle.run.record.stepsPerEpoch} steps`);
      out(`bundle ${path}`);
    });
  registerBuy(train);
  train
    .command('join <runBundle>')
    .description('take part in a run as a worker (runs until the run is done or stops)')
    .option('--json', 'one JSON event per line')
    .action(async (runBundle: string, opts: { json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const [{ loadNodeIdentity }, { readRunBundle }, { systemClock }, { createLogger }, { TrainerWorker }] = await Promise.all([
        import('../signer.js'),
        import('../../roles/trainer/run-file.js'),
        import('../../util/clock.js'),
        import('../../util/log.js'),
        import('../../roles/trainer/worker.js'),
      ]);
      const id = await loadNodeIdentity(dataDir);
      const bundle = readRunBundle(runBundle);
      const log = createLogger({ level: process.env.C0MPUTE_LOG_LEVEL ?? 'warn', format: 'pretty' });
      const w = new TrainerWorker({
        signer: id.signer,
        did: id.did,
        run: bundle.run,
        addrs: bundle.addrs,
        dir: runDir(dataDir, bundle.run.address),
        clock: systemClock,
        log,
        onEvent: (e) => (opts.json ? out(JSON.stringify(e)) : out(describeEvent(e))),
      });
      const stop = () => void w.stop().finally(() => process.exit(130));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      try {
        // inside the try: a start that fails (NET_LISTEN_FAILED) stops what it started, and the command exits with its code
        await w.start();
        await w.join();
        await w.run();
      } finally {
        await w.stop();
      }
    });
  train
    .command('status [run]')
    .description('steps, loss, throughput, each member’s contribution and the committed epoch roots (from the local worker’s status); the run by its bundle, its address or its directory name under <data dir>/train/')
    .option('--json', 'machine-readable output')
    .action(async (runArg: string | undefined, opts: { json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const base = join(dataDir, 'train');
      const held = runsHeld(base);
      let dir: string;
      const byId = runArg === undefined ? undefined : runById(runArg, held, base);
      if (byId !== undefined) dir = join(base, byId);
      else if (runArg !== undefined) dir = runDir(dataDir, (await import('../../roles/trainer/run-file.js')).readRunBundle(runArg).run.address);
      else {
        if (held.length === 0) throw new C0Error('TRAIN_RUN_UNKNOWN', 'no training run in this data directory');
        // (loaded here: `c0mpute --help` and the other commands load no trainer module, test/e2e/cli-lazy.test.ts)
        if (held.length > 1) throw severalRuns(base, held, (await import('../../roles/trainer/run-dirs.js')).readMark);
        dir = join(base, held[0]!);
      }
      const p = join(dir, 'status.json');
      if (!existsSync(p)) {
        // a member job's run dropped with the job history keeps only its mark (run-dirs.ts): said, not "not joined"
        const mark = (await import('../../roles/trainer/run-dirs.js')).readMark(dir);
        if (mark?.prunedAt !== undefined) throw new C0Error('TRAIN_RUN_PRUNED', `this node took part in that run (a member job), but its records were dropped with the job history (history.keepDays) at ${new Date(mark.prunedAt).toISOString()}`, { detail: { dir } });
        throw new C0Error('TRAIN_RUN_UNKNOWN', 'this node has not joined that run');
      }
      const { parseStatusFile, interruptedPid } = await import('../../roles/trainer/status.js');
      let text: string;
      try {
        text = readFileSync(p, 'utf8');
      } catch (e) {
        throw new C0Error('TRAIN_STATUS_UNREADABLE', `cannot read ${p}: ${(e as Error).message}`, { field: 'status.json', detail: { path: p } });
      }
      const s = parseStatusFile(text, p);
      const gone = interruptedPid(s);
      if (opts.json) return outJson(gone === undefined ? s : { ...s, interrupted: true });
      for (const l of statusLines(s, gone)) out(l);
    });
  train
    .command('stage <weightsFile>')
    .description('serve one pipeline stage of a trained model over /c0mpute/pipeline/1 (runs until stopped)')
    .requiredOption('--layers <widths>', 'layer widths, e.g. 4,16,3')
    .requiredOption('--stage <k>', 'this stage (0-based)')
    .requiredOption('--of <n>', 'number of stages')
    .option('--listen <multiaddr>', 'listen address', '/ip4/127.0.0.1/tcp/0')
    .option('--next <multiaddr>', 'the next stage (multiaddr ending in /p2p/<peer id>), dialled at start (not reachable: a warning, and the stage serves on)')
    .option('--allow <dids>', 'only these callers (DIDs, comma-separated: the driver for stage 0, the stage before for the others); others are refused PIPELINE_NOT_ALLOWED before their request is read (default: anyone)')
    .action(async (weightsFile: string, opts: { layers: string; stage: string; of: string; listen: string; next?: string; allow?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const [{ loadNodeIdentity }, { partition, servesText }, { paramCount, weightsFromBytes }, { createNetwork }, { serveStage, parseAllow }, { isMultiaddr, isPeerAddr }, { hashHex }] = await Promise.all([
        import('../signer.js'),
        import('../../training/pipeline.js'),
        import('../../training/model.js'),
        import('../../net/node.js'),
        import('../../training/pipeline-net.js'),
        import('../../net/addr-text.js'),
        import('../../records/address.js'),
      ]);
      // checked before anything is loaded or started: a bad list is a usage error, not a stage that serves anyone
      let allow: string[] | undefined;
      try {
        allow = opts.allow === undefined ? undefined : parseAllow(opts.allow);
      } catch (e) {
        throw e instanceof C0Error ? new UsageError(e.code, e.message, { field: 'allow' }) : e;
      }
      // a multiaddr each, checked before the node is made: not `internal error: String multiaddr must start with "/"`
      if (!isMultiaddr(opts.listen)) throw new UsageError('TRAIN_BAD_OPTION', `--listen: "${opts.listen.slice(0, 80)}" is not a multiaddr (e.g. /ip4/127.0.0.1/tcp/4200)`, { field: 'listen' });
      if (opts.next !== undefined && !isPeerAddr(opts.next)) throw new UsageError('TRAIN_BAD_OPTION', `--next: "${opts.next.slice(0, 80)}" is not a multiaddr (e.g. /ip4/127.0.0.1/tcp/4201/p2p/<peer id>)`, { field: 'next' });
      // the model's shape and this stage's place in it: a wrong value is the command line's (exit 2), naming the flag
      const shape = { layers: parseLayers(opts.layers) };
      const L = shape.layers.length - 1;
      if (!/^[0-9]+$/.test(opts.of) || Number(opts.of) < 1 || Number(opts.of) > L) throw new UsageError('PIPELINE_STAGES_INVALID', `--of: "${opts.of.slice(0, 40)}" stages; a ${opts.layers} model has 1 to ${L}`, { field: 'of' });
      const ranges = partition(shape, Number(opts.of));
      const range = /^[0-9]+$/.test(opts.stage) ? ranges[Number(opts.stage)] : undefined;
      if (!range) throw new UsageError('PIPELINE_STAGES_INVALID', `--stage: "${opts.stage.slice(0, 40)}"; with --of ${opts.of} it must be 0 to ${ranges.length - 1}`, { field: 'stage' });
      // --next on the last stage is not used: said, not refused (the route a request carries names the stages after a stage)
      const last = Number(opts.stage) === ranges.length - 1;
      if (last && opts.next !== undefined) warn('PIPELINE_NEXT_UNUSED', `--next ${opts.next.slice(0, 120)} is not used: stage ${opts.stage} of ${opts.of} is the last, no stage comes after it`);
      const id = await loadNodeIdentity(dataDir);
      const bytes = readInput(weightsFile);
      // a file that is not float64 weights at all is named as the wrong count is (QA ffTrainDay2 F4: `weights: length is not…`)
      const w = weightsFromBytes(bytes, weightsFile);
      // the weights it serves, by address: the file's SHA-256, hashed once (the stage's `serves` answer says it too)
      const weights = hashHex(bytes);
      if (w.length !== paramCount(shape)) throw new C0Error('TRAIN_WEIGHTS_INVALID', `${weightsFile}: ${w.length} weights, a ${opts.layers} model has ${paramCount(shape)}`);
      const { createLogger } = await import('../../util/log.js');
      // refusals, failed forwards and broken streams go to stderr (QA qaTrn F4: a stage logged nothing after its start line)
      const log = createLogger({ level: process.env.C0MPUTE_LOG_LEVEL ?? 'info', format: 'pretty' }).child({ module: 'stage' });
      const net = await createNetwork({ signer: id.signer, listen: [opts.listen], loopback: true, syncOnConnect: [], topics: [], listenAs: { who: 'this stage', fix: 'give another --listen' }, ...(opts.next && !last ? { bootstrap: [opts.next] } : {}) });
      try {
        await serveStage(net, { shape, w, range, log, weights, ...(allow ? { allow } : {}) });
        await net.start();
      } catch (e) {
        // a node that did not start (NET_LISTEN_FAILED) is stopped, or its open handles keep the process alive after the error
        await net.stop().catch(() => {});
        throw e;
      }
      out(`serving stage ${opts.stage} of ${opts.of}, ${servesText(shape, range)}, as ${id.did} at ${net.addrs()[0]}${allow ? `, to ${allow.length} allowed caller${allow.length === 1 ? '' : 's'}` : ''}`);
      // the weights it serves, by address (the file's SHA-256): what `train infer --weights` checks (QA ffTrainDay2 F1)
      out(`weights ${weights}`);
      // --next dialled once now, its failure said (QA qaTrn F9: accepted silently); the stage serves on, and its node
      // keeps redialling it (a next stage started later is found), so a request's forward may still reach it
      // (not awaited before the stop signals are taken: a dial with no answer takes up to 10 s, and a Ctrl-C in it stops the node)
      const stopped = new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      if (opts.next !== undefined && !last) {
        const next = opts.next;
        void dialNext(net, next).then((reason) => {
          if (reason !== undefined) warn('PIPELINE_NEXT_UNREACHABLE', `--next ${next.slice(0, 120)} is not reachable now (${reason}); serving anyway: a request's forward fails PIPELINE_NEXT_STAGE_FAILED until it is up (start the stages last to first)`);
        });
      }
      await stopped;
      await net.stop();
    });
  registerInfer(train);
  train
    .command('reference <runBundle>')
    .description('run the same training in this one process (plain sum, same quantisation) and print the final weights’ address')
    .option('--json', 'machine-readable output')
    .action(async (runBundle: string, opts: { json?: boolean }) => {
      const { readRunBundle, referenceFor } = await import('../../roles/trainer/run-file.js');
      const r = referenceFor(readRunBundle(runBundle).run.record);
      if (opts.json) return outJson(r);
      out(`single-process weights ${r.weights}, held-out accuracy ${(r.accuracy * 100).toFixed(1)} %`);
    });
  train
    .command('verify <runBundle> <epochFile> <stepCommitment>')
    .description('check that a step commitment is included under a committed, witnessed epoch root')
    .option('--proof <file>', 'check this inclusion proof (JSON) instead of building one from the epoch’s leaves')
    .option('--json', 'machine-readable output (includes the proof)')
    .action(async (runBundle: string, epochFile: string, stepFile: string, opts: { proof?: string; json?: boolean }) => {
      const [{ readRunBundle }, { verifyInclusion }, { parseEpochFile, parseProof, checkStepFile }] = await Promise.all([
        import('../../roles/trainer/run-file.js'),
        import('../../training/verify.js'),
        import('../../training/verify-input.js'),
      ]);
      const notVerified = (e: C0Error) => new NegativeAnswer([`not verified: ${e.code}: ${e.message}`]);
      let bundle;
      try {
        bundle = readRunBundle(runBundle);
      } catch (e) {
        // a forged run (a flipped byte: ENVELOPE_BAD_SIGNATURE) is a verdict, as for the other records; a file that is no bundle stays TRAIN_RUN_FILE (exit 3)
        if (e instanceof C0Error && /^(ENVELOPE_|RECORD_)/.test(e.code)) throw notVerified(new C0Error(e.code, `the run: ${e.message}`));
        throw e;
      }
      // the files' form first (TRAIN_VERIFY_INPUT_INVALID naming the argument, exit 3), then what their records say (exit 1)
      const ep = parseEpochFile(new TextDecoder().decode(readInput(epochFile)), epochFile);
      const proof = opts.proof ? parseProof(new TextDecoder().decode(readInput(opts.proof)), opts.proof) : undefined;
      const step = readInput(stepFile);
      checkStepFile(step, stepFile);
      if (!proof && !ep.leaves) throw new C0Error('TRAIN_VERIFY_INPUT_INVALID', `epochFile ${epochFile}: no leaves to build the proof from; give --proof`, { field: 'epochFile' });
      let r: VerifyResult;
      try {
        r = verifyInclusion({
          run: bundle.run.bytes,
          epoch: new Uint8Array(Buffer.from(ep.envelope, 'hex')),
          witnesses: ep.witnesses.map((w) => new Uint8Array(Buffer.from(w.envelope, 'hex'))),
          step,
          ...(proof ? { proof } : { leaves: ep.leaves! }),
        });
      } catch (e) {
        // every check of the records is the verdict: a record that does not open (forged, another type) as much as one that opens and says otherwise
        if (e instanceof C0Error) throw notVerified(e);
        throw e;
      }
      if (opts.json) return outJson({ ok: true, ...r });
      out(`included: step ${r.step} of ${r.worker}`);
      out(`  under root ${r.root} (epoch ${r.epoch}), signed by the elected coordinator ${r.coordinator}, witnessed by ${r.witnesses.length}`);
    });
}
