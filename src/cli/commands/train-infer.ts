/**
 * `c0mpute train infer` (docs/training.md "Pipeline"): drive a pipeline of `c0mpute train stage` servers across
 * machines. It sends the input rows to stage 0 over `/c0mpute/pipeline/1` in micro-batches (GPipe: several in flight),
 * naming the stages after it as the route, and prints the output rows. The driver is the one the devnet's `--training`
 * walk uses (src/training/pipeline-net.ts remotePipeline, src/training/pipeline.ts gpipeForward); this node's key is
 * the caller, so stage 0's `--allow` names this node's DID. Before (QA qaPnet F7), nothing on the command line could
 * drive stages set up by hand.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { out, outJson, readInput, UsageError } from '../context.js';
import { globals } from './index.js';
import { ownDescriptor } from '../../util/atomic-file.js';

/** `--layers`: at least two positive layer widths ("4,16,3"), else TRAIN_BAD_OPTION (a usage error). */
export function parseLayers(text: string): number[] {
  const layers = text.split(',').map((x) => x.trim());
  if (layers.length < 2 || layers.some((x) => !/^[1-9][0-9]{0,8}$/.test(x))) {
    throw new UsageError('TRAIN_BAD_OPTION', `--layers: "${text.slice(0, 80)}" is not a list of at least two positive layer widths, e.g. 4,16,3`, { field: 'layers' });
  }
  return layers.map(Number);
}

/**
 * The input rows of `train infer`: a JSON array of rows, each an array of `width` finite numbers (the model's input
 * width), at least one row; else PIPELINE_INPUT_INVALID naming the row. Flattened row by row.
 */
export function parseRows(text: string, width: number, what: string): { x: Float64Array; rows: number } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new C0Error('PIPELINE_INPUT_INVALID', `${what}: not JSON (${(e as Error).message.slice(0, 120)}); give an array of rows, e.g. [[5.1, 3.5, 1.4, 0.2]]`, { field: 'input' });
  }
  if (!Array.isArray(v) || v.length === 0) throw new C0Error('PIPELINE_INPUT_INVALID', `${what}: give a non-empty JSON array of rows, each an array of ${width} numbers`, { field: 'input' });
  const x = new Float64Array(v.length * width);
  v.forEach((row: unknown, i) => {
    if (!Array.isArray(row) || row.length !== width || !row.every((n) => typeof n === 'number' && Number.isFinite(n))) {
      throw new C0Error('PIPELINE_INPUT_INVALID', `${what}: row ${i} is not an array of ${width} finite numbers (the model's input width, --layers)`, { field: 'input' });
    }
    x.set(row as number[], i * width);
  });
  return { x, rows: v.length };
}

/** A stage's multiaddr must end in /p2p/<peer id> (the route names stages by key): its DID, else TRAIN_BAD_OPTION. */
async function stageDid(addr: string, k: number): Promise<string> {
  const [{ peerIdOfAddr }, { didFromPeerId }] = await Promise.all([import('../../net/addr-text.js'), import('../../node/peer-id.js')]);
  const id = peerIdOfAddr(addr);
  if (id !== undefined) {
    try {
      return didFromPeerId(id);
    } catch {
      /* said below */
    }
  }
  throw new UsageError('TRAIN_BAD_OPTION', `--stages: stage ${k}'s "${addr.slice(0, 100)}" is not a multiaddr ending in /p2p/<peer id> (as \`train stage\` prints it)`, { field: 'stages' });
}

/**
 * `--weights`: a weights address (`sha256:` and 64 hex digits, as `train stage` prints it) or a weights file, whose
 * address is the SHA-256 of its bytes; anything else is TRAIN_BAD_OPTION, a file that cannot be read INPUT_UNREADABLE.
 */
async function weightsOption(text: string): Promise<string> {
  const { hashHex, isAddress } = await import('../../records/address.js');
  if (isAddress(text as unknown)) return text;
  if (text.startsWith('sha256:')) throw new UsageError('TRAIN_BAD_OPTION', `--weights: "${text.slice(0, 80)}" is not a weights address (sha256: and 64 lower-case hex digits) nor a file`, { field: 'weights' });
  return hashHex(readInput(text));
}

/** Whether a file argument reads this process's standard input: `-`, or a name of descriptor 0 (/dev/stdin, /dev/fd/0…). */
function readsStdin(path: string): boolean {
  return path === '-' || ownDescriptor(resolve(path)) === 0;
}

export function registerInfer(train: Command): void {
  train
    .command('infer')
    .description('drive a pipeline of `train stage` servers: send input rows to stage 0, print the output rows')
    .requiredOption('--stages <multiaddrs>', 'every stage in order, comma-separated, each ending in /p2p/<peer id> (as `train stage` prints it); only stage 0 is dialled')
    .requiredOption('--layers <widths>', 'the model’s layer widths, as the stages were given, e.g. 4,16,3 (checked against what the stages say they serve)')
    .requiredOption('--input <file>', 'the input rows: a JSON array of rows, each an array of numbers of the first layer’s width ("-": stdin)')
    .option('--micro <n>', 'micro-batches to cut the rows into (GPipe; at most 32 in flight at once)', '4')
    .option('--weights <address|file>', 'the weights every stage must serve: their address (sha256:…, as `train stage` prints it) or the weights file; without it, the stages must serve the same weights')
    .option('--json', 'machine-readable output: {rows, outputs, predictions}')
    .action(async (opts: { stages: string; layers: string; input: string; micro: string; weights?: string; json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const layers = parseLayers(opts.layers);
      // one standard input: the weights file would take it all and the rows read nothing
      if (opts.weights !== undefined && readsStdin(opts.weights) && readsStdin(opts.input)) throw new UsageError('TRAIN_BAD_OPTION', `--weights ${opts.weights} and --input ${opts.input}: only one of them can read standard input; give the other as a file (or the weights as their address)`, { field: 'weights' });
      if (!/^[1-9][0-9]{0,5}$/.test(opts.micro)) throw new UsageError('TRAIN_BAD_OPTION', `--micro: "${opts.micro.slice(0, 40)}" is not a whole number of micro-batches from 1`, { field: 'micro' });
      const addrs = opts.stages.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
      if (addrs.length === 0) throw new UsageError('TRAIN_BAD_OPTION', '--stages: name every stage, stage 0 first', { field: 'stages' });
      if (addrs.length > layers.length - 1) throw new UsageError('PIPELINE_STAGES_INVALID', `--stages: ${addrs.length} stages; a ${opts.layers} model has at most ${layers.length - 1}`, { field: 'stages' });
      const route: string[] = [];
      for (const [k, a] of addrs.entries()) {
        const did = await stageDid(a, k);
        // a stage named twice would be asked to forward to itself (a node does not dial itself): said as what it is
        const first = route.indexOf(did);
        if (first >= 0) throw new C0Error('PIPELINE_ROUTE_MISMATCH', `--stages: stage ${k} (${a.slice(0, 120)}) is stage ${first} again: give each stage once, in order`, { field: 'stages', detail: { stage: did, index: k, likely: 'extra' } });
        route.push(did);
      }
      const expected = opts.weights === undefined ? undefined : await weightsOption(opts.weights);
      const { x, rows } = parseRows(new TextDecoder().decode(readInput(opts.input)), layers[0]!, opts.input);
      const [{ loadNodeIdentity }, { createNetwork }, { remotePipeline, connectStage, describeRoute, checkRoute, DRIVER_IN_FLIGHT }, { gpipeForward, firstNonFinite }, { argmaxRows }] = await Promise.all([
        import('../signer.js'),
        import('../../net/node.js'),
        import('../../training/pipeline-net.js'),
        import('../../training/pipeline.js'),
        import('../../training/model.js'),
      ]);
      const id = await loadNodeIdentity(dataDir);
      const net = await createNetwork({ signer: id.signer, listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, syncOnConnect: [], topics: [] });
      const outW = layers[layers.length - 1]!;
      let y: Float64Array;
      try {
        await net.start();
        const stages = route.map((did, k) => ({ did, addr: addrs[k]! }));
        await connectStage(net, stages);
        // --layers and the order of --stages against what the stages say they serve, before any row is sent (QA qaTrn F7,
        // F8): PIPELINE_LAYERS_MISMATCH, PIPELINE_ROUTE_MISMATCH naming the stage; a stage of an older build says nothing (a warning)
        // and the weights they serve: one model's (QA ffTrainDay2 F1), --weights' when given: PIPELINE_WEIGHTS_MISMATCH
        for (const w of checkRoute(stages, layers, await describeRoute(net, stages), expected === undefined ? {} : { weights: expected })) process.stderr.write(`warning ${w.code}: ${w.message}\n`);
        // errors come back with their codes, naming the stage by place, key and address: PIPELINE_NOT_ALLOWED (stage 0's --allow), PIPELINE_NEXT_STAGE_FAILED, NET_DIAL_FAILED…
        y = await gpipeForward([remotePipeline(net, stages)], x, rows, layers[0]!, outW, Number(opts.micro), { serialise: false, inFlight: DRIVER_IN_FLIGHT });
      } finally {
        await net.stop().catch(() => {});
      }
      // a stage refuses a layer that overflows (PIPELINE_OUTPUT_NOT_FINITE naming the layer); a stage of an older build does not
      const bad = firstNonFinite(y);
      if (bad >= 0) throw new C0Error('PIPELINE_OUTPUT_NOT_FINITE', `row ${Math.floor(bad / outW)}'s output ${y[bad]} is not finite: float64 overflowed along the pipeline; scale the input down`, { detail: { row: Math.floor(bad / outW) } });
      const outputs = Array.from({ length: rows }, (_, i) => Array.from(y.subarray(i * outW, (i + 1) * outW)));
      const predictions = Array.from(argmaxRows(y, rows, outW));
      if (opts.json) return outJson({ rows, outputs, predictions });
      outputs.forEach((o, i) => out(`row ${i}: class ${predictions[i]}  ${o.map((v) => v.toPrecision(6)).join(' ')}`));
      out(`${rows} row${rows === 1 ? '' : 's'} through ${route.length} stage${route.length === 1 ? '' : 's'} in ${Math.min(Number(opts.micro), rows)} micro-batch${Math.min(Number(opts.micro), rows) === 1 ? '' : 'es'}`);
    });
}
