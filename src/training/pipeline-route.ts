/**
 * A pipeline's route, as the stages say what they serve (docs/training.md "Pipeline", "Driving it"): how a stage's
 * layers are said, a stage named by its place in `--stages`, the answer to `{ask: "serves"}` read, and `--layers` and
 * the order of `--stages` checked against it (checkRoute). Pure: the asking is src/training/pipeline-net.ts
 * (serveStage answers, describeRoute asks).
 */
import { C0Error } from '../errors.js';
import type { CborValue } from '../records/cbor.js';
import { isAddress } from '../records/address.js';
import type { MlpShape } from './model.js';
import { servesText } from './pipeline.js';

/** A stage of a driver's route: its DID and, when known, the address it was given by (`train infer --stages`). */
export interface RouteStage {
  did: string;
  addr?: string;
}

/** How a driver names stage `k` of its route: its place, its key and its address (QA qaTrn F3: the peer id alone). */
export function stageName(route: RouteStage[], k: number): string {
  const s = route[k]!;
  return `stage ${k} (${s.did}${s.addr ? ` at ${s.addr}` : ''})`;
}

/**
 * The refusal of a route longer than the stages that can follow a stage: what the stage serves (servesText) and the
 * likely cause. Before (QA qaTrn F8), `a route of 1 stages; at most 0 can follow this one (layers 1–2 of 2)`.
 */
export function routeTooLong(n: number, left: number, shape: MlpShape, range: [number, number]): string {
  const serves = servesText(shape, range);
  const cause = left === 0 ? 'it serves the last layer, so no stage comes after it: give the stages in order, stage 0 first' : `only ${left} more layer${left === 1 ? '' : 's'} come${left === 1 ? 's' : ''} after it: give the stages in order, each once`;
  return `a route of ${n} more stage${n === 1 ? '' : 's'} after this one, which serves ${serves}; at most ${left} can follow it: ${cause}`;
}

/**
 * What a stage says it serves (`{ask: "serves"}`): the model's layer widths, its layers [from, to), and the address
 * of the whole model's weights it was started with (`sha256:` of the weights file, as `train status` names a run's
 * weights); a stage of a build before it says no `weights`.
 */
export interface StageServes {
  layers: number[];
  from: number;
  to: number;
  weights?: string;
}


/**
 * The answer to `{ask: "serves", route}`: an entry for the stage asked and each one after it along the route that
 * said, in order; `end` says why the list stops short of the route: `unsaid` (the next stage does not know the
 * question: a build before it), `not-asked` (the route is longer than the stages that can follow the last entry).
 */
export interface RouteServes {
  serves: StageServes[];
  end?: 'unsaid' | 'not-asked';
}

const isWidth = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;

/** An answer to `{ask: "serves"}` as read, at most `most` entries; undefined when it does not read as one (said as unsaid). */
export function readServes(frames: CborValue[], most: number): RouteServes | undefined {
  const a = frames[0] as { serves?: unknown; end?: unknown } | undefined;
  if (frames.length !== 1 || !a || typeof a !== 'object' || !Array.isArray(a.serves) || a.serves.length > most) return undefined;
  if (a.end !== undefined && a.end !== 'unsaid' && a.end !== 'not-asked') return undefined;
  const serves: StageServes[] = [];
  for (const e of a.serves as unknown[]) {
    const x = e as { layers?: unknown; from?: unknown; to?: unknown; weights?: unknown } | null;
    if (!x || typeof x !== 'object' || !Array.isArray(x.layers) || x.layers.length < 2 || x.layers.length > 1_000 || !x.layers.every(isWidth)) return undefined;
    const L = x.layers.length - 1;
    if (typeof x.from !== 'number' || typeof x.to !== 'number' || !Number.isSafeInteger(x.from) || !Number.isSafeInteger(x.to) || x.from < 0 || x.to <= x.from || x.to > L) return undefined;
    if (x.weights !== undefined && !isAddress(x.weights)) return undefined;
    serves.push({ layers: x.layers as number[], from: x.from, to: x.to, ...(x.weights !== undefined ? { weights: x.weights as string } : {}) });
  }
  return { serves, ...(a.end !== undefined ? { end: a.end as 'unsaid' | 'not-asked' } : {}) };
}

/**
 * `--layers` and the order of `--stages` checked against what the stages say they serve (describeRoute), before any
 * row is sent. A stage of another model is PIPELINE_LAYERS_MISMATCH (`detail.layers`, `detail.expected`); stages out
 * of order, one left out or one too many are PIPELINE_ROUTE_MISMATCH with `detail.likely` `order` | `missing` |
 * `extra`; both name the stage (`detail.stage`, `detail.index`) and what it serves. A stage that does not say (a build
 * before it) is a warning, PIPELINE_STAGE_UNCHECKED: it and the stages after it are not checked. Pure. Before (QA
 * qaTrn F7, F8), a wrong --layers went unnoticed (exit 0), and a reversed or short --stages said only `a route of 1
 * stages…` or `stage output of 32 values, expected 6`.
 */
export function checkRoute(route: RouteStage[], layers: number[], said: RouteServes, o: { weights?: string } = {}): Array<{ code: string; message: string }> {
  const warnings = checkOrder(route, layers, said);
  return [...checkWeights(route, said.serves.slice(0, route.length), o.weights), ...warnings];
}

/**
 * The stages' weights: every stage that says them must serve the same model's weights, and the ones `--weights` names
 * when given; else PIPELINE_WEIGHTS_MISMATCH naming the stage, what it serves and what was expected (`detail.weights`,
 * `detail.expected`). Stages started with the weights of different runs of one shape pass every layer check, and the
 * output is no model's forward (QA ffTrainDay2 F1: exit 0). A stage that says no weights (a build before it) is a
 * warning, PIPELINE_WEIGHTS_UNCHECKED.
 */
function checkWeights(route: RouteStage[], S: StageServes[], expected: string | undefined): Array<{ code: string; message: string }> {
  const first = S.findIndex((s) => s.weights !== undefined);
  const ref = expected ?? (first >= 0 ? S[first]!.weights : undefined);
  for (const [k, s] of S.entries()) {
    if (s.weights === undefined || s.weights === ref) continue;
    const want = expected !== undefined ? `--weights names ${expected}` : `${stageName(route, first)} serves ${ref}`;
    throw new C0Error('PIPELINE_WEIGHTS_MISMATCH', `${stageName(route, k)} serves weights ${s.weights}, but ${want}: every stage must be started with the same weights file`, {
      field: expected !== undefined ? 'weights' : 'stages',
      detail: { stage: route[k]!.did, index: k, weights: s.weights, expected: ref },
    });
  }
  // the stages past the answer (after one of a build before stages said what they serve) say nothing either
  const unsaid = [...S.flatMap((s, k) => (s.weights === undefined ? [k] : [])), ...route.slice(S.length).map((_, i) => S.length + i)];
  if (!unsaid.length) return [];
  return [
    {
      code: 'PIPELINE_WEIGHTS_UNCHECKED',
      message: `${unsaid.map((k) => stageName(route, k)).join(', ')} ${unsaid.length === 1 ? 'does' : 'do'} not say which weights ${unsaid.length === 1 ? 'it serves' : 'they serve'} (a build from before stages said it): ${unsaid.length === 1 ? 'its' : 'their'} weights are not checked`,
    },
  ];
}

function checkOrder(route: RouteStage[], layers: number[], said: RouteServes): Array<{ code: string; message: string }> {
  const L = layers.length - 1;
  const model = layers.join(',');
  const S = said.serves.slice(0, route.length);
  const mismatch = (k: number, likely: 'order' | 'missing' | 'extra', message: string) => new C0Error('PIPELINE_ROUTE_MISMATCH', message, { field: 'stages', detail: { stage: route[k]!.did, index: k, likely, serves: S[k] } });
  for (const [k, s] of S.entries()) {
    const serves = servesText({ layers: s.layers }, [s.from, s.to]);
    if (s.layers.length !== layers.length || s.layers.some((w, i) => w !== layers[i])) {
      throw new C0Error('PIPELINE_LAYERS_MISMATCH', `${stageName(route, k)} serves ${serves} of a ${s.layers.join(',')} model; --layers says ${model}: give the model the stages serve`, { field: 'layers', detail: { stage: route[k]!.did, index: k, layers: s.layers, expected: layers } });
    }
    const want = k === 0 ? 0 : S[k - 1]!.to;
    if (s.from === want) continue;
    const wanted = k === 0 ? `the first stage must serve layer 0` : `after stage ${k - 1}, which ends with layer ${want - 1}, layer ${want} must come next`;
    const other = S.findIndex((x, j) => j !== k && x.from === want);
    if (other >= 0) throw mismatch(k, 'order', `${stageName(route, k)} serves ${serves}, but ${wanted}, and stage ${other} of --stages serves it: give the stages in order`);
    // a gap with the stages from here on following one another is a stage left out (as docs/training.md says); else the order
    const follows = S.length === route.length && S.slice(k + 1).every((x, j) => x.from === S[k + j]!.to);
    if (s.from > want && k + 1 < route.length && !follows) throw mismatch(k, 'order', `${stageName(route, k)} serves ${serves}, but ${wanted}: give the stages in order, stage 0 first (or the stage that serves layer ${want} is missing)`);
    if (s.from > want) throw mismatch(k, 'missing', `${stageName(route, k)} serves ${serves}, but ${wanted}: a stage is missing before it (no stage of --stages serves layer${s.from - want === 1 ? '' : 's'} ${s.from - want === 1 ? want : `${want}–${s.from - 1}`})`);
    throw mismatch(k, 'order', `${stageName(route, k)} serves ${serves}, but ${wanted}: a stage given twice, or out of order`);
  }
  const last = S.length - 1;
  if (S.length === route.length) {
    const end = S[last]!;
    if (end.to < L) throw mismatch(last, 'missing', `the last of --stages, ${stageName(route, last)}, serves ${servesText({ layers }, [end.from, end.to])}; ${servesText({ layers }, [end.to, L])} is served by no stage of --stages: a stage is missing after it`);
    return [];
  }
  if (said.end === 'not-asked' && last >= 0) {
    const end = S[last]!;
    const more = route.length - 1 - last;
    const serves = servesText({ layers }, [end.from, end.to]);
    if (end.to === L) throw mismatch(last, 'extra', `${stageName(route, last)} serves ${serves}, the last layer, but --stages names ${more} more after it: give the stages in order, each once`);
    throw mismatch(last, 'extra', `${stageName(route, last)} serves ${serves}, but --stages names ${more} more after it and only ${L - end.to} layer${L - end.to === 1 ? '' : 's'} come${L - end.to === 1 ? 's' : ''} after it: a stage given twice, or out of order`);
  }
  const k = S.length;
  return [
    {
      code: 'PIPELINE_STAGE_UNCHECKED',
      message: `${stageName(route, k)} does not say what it serves (a build from before stages said it): --layers and the order of ${k === 0 ? 'the stages' : `the stages from stage ${k} on`} are not checked`,
    },
  ];
}
