/**
 * Pipeline stages over libp2p (`/c0mpute/pipeline/1`; docs/training.md
 * "Pipeline"): a stage server owns layers [from, to) of a model and serves
 * micro-batches one at a time; a request carries the route of the stages
 * still to come, so the activations flow stage to stage (this stage forwards
 * its output to the next and passes the final output back). Frames are
 * bounded (activations split into 512 KiB byte frames); every stream has the
 * deadline of the request. A caller outside the server's `allow` is refused
 * (PIPELINE_NOT_ALLOWED); a route must be DIDs, at most one per stage that can
 * still come after this one (the layers past it), so one request makes a
 * bounded number of forwards (PIPELINE_BAD_REQUEST). A request carries at most
 * 3 MiB of activations, refused before it is decoded (PIPELINE_TOO_LARGE) and
 * bounded on the wire as it is read (PIPELINE_LIMITS); its batch is a positive
 * integer (PIPELINE_BAD_REQUEST) whose rows × the stage's widest layer are at
 * most MAX_STAGE_VALUES and whose output (rows × the stage's output width × 8
 * bytes) is at most 3 MiB, both checked before anything is computed
 * (PIPELINE_TOO_LARGE). Requests are computed one at a time, callers in
 * turn, at most STAGE_QUEUE.perCaller held per caller (waiting, computed or
 * forwarding) and STAGE_QUEUE.total waiting or running in all (PIPELINE_BUSY
 * beyond), and one whose caller left while it waited is not
 * computed (PIPELINE_CALLER_LEFT: src/training/pipeline.ts StageQueue). A forward has a share of the
 * request deadline and fails as PIPELINE_NEXT_STAGE_FAILED naming the next stage. A stage says what it serves
 * (`{ask: "serves", route}`: its layers and the model's widths, then the stages' after it along the route), and a
 * driver checks --layers and the order of --stages against it before it sends a row (describeRoute;
 * src/training/pipeline-route.ts checkRoute).
 */
import { C0Error } from '../errors.js';
import type { CborValue } from '../records/cbor.js';
import type { Network } from '../net/node.js';
import type { ServeContext } from '../net/protocols.js';
import type { Logger } from '../util/log.js';
import { didFromPeerId } from '../node/peer-id.js';
import { handshakeFailure } from '../net/refusals.js';
import { isDid } from '../records/did.js';
import { hashHex } from '../records/address.js';
import { weightsBytes, weightsFromBytes, type MlpShape } from './model.js';
import { STAGE_QUEUE, StageQueue, stageForwardFinite, type StageRunner } from './pipeline.js';
import { readServes, routeTooLong, stageName, type RouteServes, type RouteStage, type StageServes } from './pipeline-route.js';

// the route's pure parts, where the drivers and tests have found them
export { checkRoute, readServes, routeTooLong, stageName, type RouteServes, type RouteStage, type StageServes } from './pipeline-route.js';
import { PAYLOAD_FRAME, splitPayload, withRetry } from './transport.js';

export const PIPELINE_PROTOCOL = '/c0mpute/pipeline/1';
/** Largest activations one request carries: a libp2p stream buffering more than about 4 MiB is reset (docs/training.md); use more micro-batches. */
export const MAX_ACTIVATION_BYTES = 3 * 1024 * 1024;

function checkSize(bytes: number): void {
  if (bytes > MAX_ACTIVATION_BYTES) throw new C0Error('PIPELINE_TOO_LARGE', `activations of ${bytes} bytes over ${MAX_ACTIVATION_BYTES}; use more micro-batches`);
}
/** Values one request may make a stage hold at its widest layer (rows × width), as builtin.mlp-pipeline bounds it. */
export const MAX_STAGE_VALUES = 16_777_216;
/** Room for the header frame and the framing of the payload frames, on top of the activations. */
const FRAMING_BYTES = 32 * 1024;
/**
 * The wire bounds of `/c0mpute/pipeline/1`, both ways: a header and at most
 * 3 MiB of activations in 512 KiB frames, so a larger request is refused as
 * the stream is read (NET_TOO_MANY_FRAMES, NET_BUFFER_LIMIT), not buffered.
 */
export const PIPELINE_LIMITS = {
  maxFrameBytes: PAYLOAD_FRAME + 1024,
  maxRequestFrames: 1 + Math.ceil(MAX_ACTIVATION_BYTES / PAYLOAD_FRAME),
  maxResponseFrames: Math.ceil(MAX_ACTIVATION_BYTES / PAYLOAD_FRAME),
  deadlineMs: 60_000,
  // a request is many frames (up to 3 MiB of activations): it may take the whole deadline, as before (ProtocolLimits.requestMs)
  requestMs: 60_000,
  // above a caller's bound (STAGE_QUEUE.perCaller): its requests past that bound are answered PIPELINE_BUSY by the
  // stage, not reset by libp2p; both ends, so a stage's forwards to the next are not cut at libp2p's 64 either
  maxInboundStreams: 2 * STAGE_QUEUE.perCaller,
  maxOutboundStreams: 2 * STAGE_QUEUE.perCaller,
  maxStreamBytes: MAX_ACTIVATION_BYTES + FRAMING_BYTES,
  maxResponseBytes: MAX_ACTIVATION_BYTES + FRAMING_BYTES,
};
const LIMITS = PIPELINE_LIMITS;
/** The protocol's prefix on an error frame's message (DirectProtocols.open): a stage or driver names the stage instead. */
const ANSWERED = `${PIPELINE_PROTOCOL} peer answered: `;

function joinBytes(frames: CborValue[]): Uint8Array {
  const parts = frames.filter((f): f is Uint8Array => f instanceof Uint8Array);
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/**
 * The callers a stage admits, from `--allow` text: DIDs separated by commas (spaces around them ignored); an entry
 * that is not a DID, or no entry at all, is PIPELINE_ALLOW_INVALID naming the field.
 */
export function parseAllow(text: string): string[] {
  const dids = text.split(',').map((d) => d.trim()).filter((d) => d !== '');
  if (!dids.length) throw new C0Error('PIPELINE_ALLOW_INVALID', '--allow names no DID', { field: 'allow' });
  const bad = dids.find((d) => !isDid(d));
  if (bad !== undefined) throw new C0Error('PIPELINE_ALLOW_INVALID', `--allow entry ${JSON.stringify(String(bad).slice(0, 100))} is not a DID`, { field: 'allow' });
  return [...new Set(dids)];
}

export interface StageServerOptions {
  shape: MlpShape;
  w: Float64Array;
  range: [number, number];
  /** Who may call (default: anyone). */
  allow?: string[];
  /** The deadline of a request to this stage, ms (default PIPELINE_LIMITS.deadlineMs): the forward to the next stage gets a share of it. */
  deadlineMs?: number;
  /** Where the stage says what it refused and what failed (default: nowhere). */
  log?: Logger;
  /** The address of the weights it serves, when its caller has it (the file's SHA-256: `train stage`); else hashed when first asked. */
  weights?: string;
}

/** A stage's log lines of one kind at most once per this many ms; the ones held back are counted in the next (`more`). */
export const STAGE_LOG_WINDOW_MS = 10_000;

/**
 * What a stage's operator sees of a request that did not end well (docs/training.md "Pipeline"): a forward that
 * failed or timed out at warn (the next stage, or the stages after it, are in trouble), the caller's own failures
 * (refused: not allowed, busy, a bad or too large request; the caller left or reset the stream) at info. Each code is
 * logged at most once per STAGE_LOG_WINDOW_MS, with the count of those held back, so a flood does not fill the log.
 * Before (QA qaTrn F4), a stage logged nothing after its start line.
 */
export function stageLogger(log: Logger | undefined, now: () => number = () => performance.now()): (e: unknown, caller: string) => void {
  const last = new Map<string, { at: number; held: number }>();
  return (e, caller) => {
    if (!log) return;
    const code = e instanceof C0Error ? e.code : 'INTERNAL';
    const t = now();
    const seen = last.get(code);
    if (seen && t - seen.at < STAGE_LOG_WINDOW_MS) {
      seen.held++;
      return;
    }
    last.set(code, { at: t, held: 0 });
    const detail = e instanceof C0Error ? (e.detail as { stage?: unknown; timedOut?: unknown; callerLeft?: unknown } | undefined) : undefined;
    const fields = { code, caller, err: (e as Error)?.message?.slice(0, 300), ...(detail?.stage !== undefined ? { next: detail.stage, timedOut: detail.timedOut } : {}), ...(seen?.held ? { more: seen.held } : {}) };
    // the caller leaving mid-forward is the caller's doing, not the next stage's failure (review s53)
    if (code === 'PIPELINE_NEXT_STAGE_FAILED' && detail?.callerLeft === true) log.info(fields, 'the caller left while its request was forwarded: the forward was given up');
    else if (code === 'PIPELINE_NEXT_STAGE_FAILED') log.warn(fields, 'forward to the next stage failed');
    else if (code.startsWith('PIPELINE_')) log.info(fields, 'refused a request');
    else if (code.startsWith('NET_')) log.info(fields, 'a request failed on the wire (the caller left or reset it, or its stream broke)');
    else log.warn(fields, 'a request failed');
  };
}

/**
 * How long a stage with `left` stages still to come waits for its forward: its
 * share of the request deadline, `left / (left + 1)` of it, so every stage along
 * a route gives up before the one that called it and answers it in time
 * (PIPELINE_NEXT_STAGE_FAILED naming the stage that did not answer).
 */
export function forwardDeadlineMs(deadlineMs: number, left: number): number {
  return Math.floor((deadlineMs * left) / (left + 1));
}

/** Serve one stage on `net`. */
export async function serveStage(net: Pick<Network, 'handle' | 'request'>, o: StageServerOptions): Promise<void> {
  // one micro-batch at a time, callers in turn, bounded per caller and in all; a request whose caller left is skipped
  const queue = new StageQueue();
  const inW = o.shape.layers[o.range[0]]!;
  const outW = o.shape.layers[o.range[1]]!;
  const widest = Math.max(...o.shape.layers.slice(o.range[0], o.range[1] + 1));
  const allow = o.allow ? new Set(o.allow) : undefined;
  // every later stage owns at least one layer: at most this many stages can follow
  const stagesLeft = Math.max(0, o.shape.layers.length - 1 - o.range[1]);
  const deadlineMs = o.deadlineMs ?? LIMITS.deadlineMs;
  // each caller's requests held here, from the handler's start to its answer (waiting, computed, or waiting on the
  // stages after this one): at most STAGE_QUEUE.perCaller, one more answered PIPELINE_BUSY (QA qaTrn F1: a request that
  // waits on its forward is out of the compute queue, and libp2p reset a caller's 65th stream before any bound spoke)
  const held = new Map<string, number>();
  const said = stageLogger(o.log);
  const callerDid = (peer: Parameters<typeof didFromPeerId>[0]): string => {
    try {
      return didFromPeerId(peer);
    } catch {
      return peer.toString();
    }
  };
  const callerBusy = (caller: string): C0Error | undefined => {
    const n = held.get(caller) ?? 0;
    if (n < STAGE_QUEUE.perCaller) return undefined;
    return new C0Error('PIPELINE_BUSY', `this caller has ${n} requests at this stage (waiting, computed, or waiting on the stages after it), at most ${STAGE_QUEUE.perCaller}; send fewer micro-batches at once`, { detail: { scope: 'caller' } });
  };
  /** The output passed through the rest of the route: within this stage's share of the deadline, a failure naming the next stage (one a later stage already named is passed back as it is). */
  const forward = async (route: string[], h: { batch: number; mb: number }, y: Float64Array, caller: AbortSignal): Promise<Uint8Array> =>
    // made before the request: only what the request to the next stage brings is its failure, never this stage's own work
    joinBytes(await forwardFrames(route, [{ ...h, route: route.slice(1) }, ...splitPayload(weightsBytes(y))], caller));
  /** `frames` sent to the next stage of the route (route[0]) and its answer, within this stage's share of the deadline (as `forward`). */
  const forwardFrames = async (route: string[], frames: CborValue[], caller: AbortSignal): Promise<CborValue[]> => {
    const ms = forwardDeadlineMs(deadlineMs, route.length);
    // the share bounds the forward with its retries; the caller leaving ends it at once
    const ac = new AbortController();
    let timer: NodeJS.Timeout | undefined = setTimeout(() => {
      timer = undefined;
      ac.abort(new C0Error('NET_DEADLINE', `no answer within ${ms} ms`));
    }, ms);
    const left = () => ac.abort(caller.reason);
    if (caller.aborted) left();
    else caller.addEventListener('abort', left, { once: true });
    try {
      return await withRetry(() => net.request(route[0]!, PIPELINE_PROTOCOL, frames, { limits: { ...LIMITS, deadlineMs: ms }, signal: ac.signal }));
    } catch (e) {
      // a later stage's failure passed back: without the wire's prefix, so a route of three or more does not say it twice (review s53)
      if (e instanceof C0Error && e.code === 'PIPELINE_NEXT_STAGE_FAILED') throw e.message.startsWith(ANSWERED) ? new C0Error(e.code, e.message.slice(ANSWERED.length), { detail: e.detail }) : e;
      // a later stage's refusal of the values themselves keeps its code, naming the stage that refused (once)
      if (e instanceof C0Error && e.code === 'PIPELINE_OUTPUT_NOT_FINITE' && (e.detail as { remote?: unknown } | undefined)?.remote === true) {
        const msg = e.message.startsWith(ANSWERED) ? e.message.slice(ANSWERED.length) : e.message;
        throw new C0Error(e.code, msg.startsWith('stage did:') ? msg : `stage ${route[0]} answered: ${msg}`, { detail: { stage: route[0] } });
      }
      const why = (e instanceof C0Error ? `${e.code}: ${e.message}` : (e as Error).message).slice(0, 300);
      // worded by what happened: a timeout only when this share ran out (or the request's own deadline did), else the next stage's failure and its reason
      const timedOut = timer === undefined || (e instanceof C0Error && e.code === 'NET_DEADLINE');
      const what = caller.aborted ? `was given up: this stage's caller left (${why})` : timedOut ? `did not answer within ${ms} ms (${why})` : `failed: ${why}`;
      throw new C0Error('PIPELINE_NEXT_STAGE_FAILED', `stage ${route[0]} ${what}`, { detail: { stage: route[0], cause: e instanceof C0Error ? e.code : undefined, timedOut, ...(caller.aborted ? { callerLeft: true } : {}) } });
    } finally {
      clearTimeout(timer);
      caller.removeEventListener('abort', left);
    }
  };
  /** A route naming a stage twice goes around a loop (docs/training.md): refused before anything is asked or computed. */
  const checkNoRepeat = (route: readonly string[]): void => {
    if (new Set(route).size !== route.length) throw new C0Error('PIPELINE_BAD_REQUEST', 'the route names a stage twice: give each stage once, in order');
  };
  // the weights it serves, by address: a driver refuses a route whose stages serve different ones (checkRoute);
  // given by the caller, else hashed when first asked, so a request refused before compute reads no weight
  let selfServes: StageServes | undefined;
  const serves = (): StageServes => (selfServes ??= { layers: [...o.shape.layers], from: o.range[0], to: o.range[1], weights: o.weights ?? hashHex(weightsBytes(o.w)) });
  /**
   * A request asking what the stages of its route serve (`{ask: "serves", route}`, nothing after it): this stage's
   * entry, then the answer of the stages after it, asked in turn as a forward is (their failure is this stage's
   * PIPELINE_NEXT_STAGE_FAILED naming the next stage). A next stage that answers PIPELINE_BAD_REQUEST does not know
   * the question (a build before it): `end: "unsaid"`. A route longer than can follow this stage is not asked on:
   * `end: "not-asked"`. Nothing is computed.
   */
  const describe = async (head: { route?: unknown; ask?: unknown }, frames: number, ctx: ServeContext): Promise<CborValue> => {
    if (head.ask !== 'serves') throw new C0Error('PIPELINE_BAD_REQUEST', `ask ${typeof head.ask === 'string' ? JSON.stringify(head.ask.slice(0, 40)) : typeof head.ask} is not a question this stage knows ("serves")`);
    if (frames !== 1) throw new C0Error('PIPELINE_BAD_REQUEST', 'a question carries no frames after its first');
    if (!Array.isArray(head.route) || !head.route.every((d) => isDid(d))) throw new C0Error('PIPELINE_BAD_REQUEST', 'route entries must be DIDs');
    const route = head.route as string[];
    checkNoRepeat(route);
    if (route.length === 0) return { serves: [serves()] } as unknown as CborValue;
    if (route.length > stagesLeft) return { serves: [serves()], end: 'not-asked' } as unknown as CborValue;
    let answer: CborValue[];
    try {
      answer = await forwardFrames(route, [{ ask: 'serves', route: route.slice(1) }], ctx.signal);
    } catch (e) {
      // the next stage did not know the question (a build before it): its own refusal, said as `unsaid`, not a failure
      if (e instanceof C0Error && e.code === 'PIPELINE_NEXT_STAGE_FAILED' && (e.detail as { cause?: unknown } | undefined)?.cause === 'PIPELINE_BAD_REQUEST') return { serves: [serves()], end: 'unsaid' } as unknown as CborValue;
      throw e;
    }
    const theirs = readServes(answer, route.length);
    if (!theirs) return { serves: [serves()], end: 'unsaid' } as unknown as CborValue;
    return { serves: [serves(), ...theirs.serves], ...(theirs.end ? { end: theirs.end } : {}) } as unknown as CborValue;
  };
  /** One request, admitted: checked, computed in its turn, forwarded along its route, answered. */
  const serveOne = async (reqs: CborValue[], ctx: ServeContext): Promise<void> => {
    const head = reqs[0] as { batch?: unknown; mb?: unknown; route?: unknown; ask?: unknown } | undefined;
    if (head && typeof head === 'object' && head.ask !== undefined) return ctx.send(await describe(head, reqs.length, ctx));
    if (!head || typeof head.batch !== 'number' || !Array.isArray(head.route)) throw new C0Error('PIPELINE_BAD_REQUEST', 'first frame must be {batch, mb, route}');
    if (!Number.isSafeInteger(head.batch) || head.batch < 1) throw new C0Error('PIPELINE_BAD_REQUEST', `batch ${String(head.batch)} is not a positive integer`);
    // the request's own fields, all checked here: a bad one is this caller's request, never reported later as the next stage's failure
    const mb = head.mb ?? 0;
    if (typeof mb !== 'number' || !Number.isSafeInteger(mb) || mb < 0) throw new C0Error('PIPELINE_BAD_REQUEST', `mb ${JSON.stringify(mb)?.slice(0, 40)} is not a micro-batch number (an integer ≥ 0)`);
    if (!reqs.slice(1).every((f) => f instanceof Uint8Array)) throw new C0Error('PIPELINE_BAD_REQUEST', 'the frames after the first must be the activations’ bytes');
    // the input is bounded before it is decoded or computed (the wire bounds it as it is read; this is the documented figure)
    checkSize(reqs.slice(1).reduce((n: number, f) => n + (f instanceof Uint8Array ? f.length : 0), 0));
    if (head.batch * widest > MAX_STAGE_VALUES) throw new C0Error('PIPELINE_TOO_LARGE', `${head.batch} rows × a widest layer of ${widest} is over ${MAX_STAGE_VALUES} values; use more micro-batches`);
    // the output this stage would send on is bounded as the input is, before anything is computed
    checkSize(head.batch * outW * 8);
    if (head.route.length > stagesLeft) throw new C0Error('PIPELINE_BAD_REQUEST', routeTooLong(head.route.length, stagesLeft, o.shape, o.range));
    if (!head.route.every((d) => isDid(d))) throw new C0Error('PIPELINE_BAD_REQUEST', 'route entries must be DIDs');
    checkNoRepeat(head.route as string[]);
    const payload = joinBytes(reqs.slice(1));
    if (payload.length % 8 !== 0) throw new C0Error('PIPELINE_BAD_REQUEST', `activations of ${payload.length} bytes: not a whole number of 8-byte values`);
    const x = weightsFromBytes(payload);
    if (x.length !== head.batch * inW) throw new C0Error('PIPELINE_BAD_REQUEST', `activations of ${x.length} values, expected ${head.batch * inW}`);
    const batch = head.batch;
    const y = await queue.run(ctx.peer.toString(), ctx.signal, () => stageForwardFinite(o.shape, o.w, o.range, x, batch));
    const route = head.route as string[];
    const outBytes = route.length > 0 ? await forward(route, { batch: head.batch, mb }, y, ctx.signal) : weightsBytes(y);
    for (const f of splitPayload(outBytes)) await ctx.send(f);
  };
  await net.handle(
    PIPELINE_PROTOCOL,
    async (reqs, ctx) => {
      const caller = ctx.peer.toString();
      const busy = callerBusy(caller);
      if (busy) {
        said(busy, callerDid(ctx.peer));
        throw busy;
      }
      held.set(caller, (held.get(caller) ?? 0) + 1);
      try {
        await serveOne(reqs, ctx);
      } catch (e) {
        said(e, callerDid(ctx.peer));
        throw e;
      } finally {
        const n = (held.get(caller) ?? 1) - 1;
        if (n > 0) held.set(caller, n);
        else held.delete(caller);
      }
    },
    LIMITS,
    // a caller not allowed, or already at its bound, is refused before its activations (up to 3 MiB, read for up to 60 s) are
    {
      admit: (peer) => {
        if (allow) {
          let caller: string | undefined;
          try {
            caller = didFromPeerId(peer);
          } catch {
            caller = undefined;
          }
          if (caller === undefined || !allow.has(caller)) {
            const e = new C0Error('PIPELINE_NOT_ALLOWED', `${caller ?? 'this caller'} may not call this stage`);
            said(e, caller ?? peer.toString());
            return e;
          }
        }
        const busy = callerBusy(peer.toString());
        if (busy) said(busy, callerDid(peer));
        return busy;
      },
    },
  );
}

/**
 * Ask stage 0 what the stages of `route` serve (`{ask: "serves", route}`; docs/training.md "Driving it"), within the
 * request's deadline, retries included; failures name the stage as remotePipeline's do. A stage 0 that does not know
 * the question (PIPELINE_BAD_REQUEST: a build before it) is `{serves: [], end: "unsaid"}`, as is an answer that does
 * not read.
 */
export async function describeRoute(net: Pick<Network, 'request'>, route: RouteStage[], o: { deadlineMs?: number } = {}): Promise<RouteServes> {
  // a stage 0 that does not know the question (a build before it) answers PIPELINE_BAD_REQUEST: unsaid, not a failure
  const older = (e: unknown) => e instanceof C0Error && e.code === 'PIPELINE_BAD_REQUEST' && (e.detail as { remote?: unknown } | undefined)?.remote === true;
  const answer = await requestStage0(net, route, [{ ask: 'serves', route: route.slice(1).map((r) => r.did) }], o.deadlineMs ?? LIMITS.deadlineMs, older);
  return (answer && readServes(answer, route.length)) ?? { serves: [], end: 'unsaid' };
}

/**
 * `frames` to stage 0 of `route` and its answer, within `ms`, retries included (withRetry); a failure names the stage
 * (driverError), but for one `passed` lets through, answered undefined. Shared by the driver's forward and its question.
 */
async function requestStage0(net: Pick<Network, 'request'>, route: RouteStage[], frames: CborValue[], ms: number, passed: (e: unknown) => boolean = () => false): Promise<CborValue[] | undefined> {
  const ac = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort(new C0Error('NET_DEADLINE', `no answer within ${ms} ms`));
  }, ms);
  // whether any try reached stage 0 (a stream opened): a failure after that is the stage's, not "not reachable"
  let sent = false;
  try {
    return await withRetry(async () => {
      try {
        return await net.request(route[0]!.did, PIPELINE_PROTOCOL, frames, { limits: { ...LIMITS, deadlineMs: ms }, signal: ac.signal });
      } catch (e) {
        if (!(e instanceof C0Error) || (e.code !== 'NET_DIAL_FAILED' && e.code !== 'NET_PROTOCOL_UNSUPPORTED')) sent = true;
        throw e;
      }
    });
  } catch (e) {
    if (passed(e)) return undefined;
    throw driverError(e, route, { sent, timedOut, deadlineMs: ms });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Micro-batches a driver (`train infer`, the devnet's walk) keeps out at once: half a stage's bound per caller
 * (STAGE_QUEUE.perCaller), so two drivers under one key still fit. Before (QA qaTrn F1), `--micro 200` sent all 200 at
 * once and libp2p reset the streams past 64 (NET_STREAM_FAILED).
 */
export const DRIVER_IN_FLIGHT = STAGE_QUEUE.perCaller / 2;


/**
 * A driver's error for a request to stage 0, naming the stage: a stage's answer keeps its code (a later stage it names
 * by key is named by its place in the route too); a request stage 0 took and then did not answer within the deadline,
 * or failed under (its stream reset, its connection lost), is PIPELINE_NEXT_STAGE_FAILED naming stage 0 (`timedOut`
 * as for a stage's forward); stage 0 never reached is NET_DIAL_FAILED, one that does not speak the protocol
 * NET_PROTOCOL_UNSUPPORTED, both naming it.
 */
export function driverError(e: unknown, route: RouteStage[], o: { sent: boolean; timedOut: boolean; deadlineMs: number }): C0Error {
  const first = stageName(route, 0);
  if (!(e instanceof C0Error)) return new C0Error('PIPELINE_NEXT_STAGE_FAILED', `${first} failed: ${(e as Error)?.message ?? String(e)}`, { detail: { stage: route[0]!.did, index: 0, timedOut: false } });
  const detail = (e.detail ?? {}) as Record<string, unknown>;
  if (detail.remote === true) {
    let msg = e.message.startsWith(ANSWERED) ? e.message.slice(ANSWERED.length) : e.message;
    let named: number | undefined;
    for (let k = route.length - 1; k >= 1; k--) {
      if (msg.includes(`stage ${route[k]!.did}`)) {
        msg = msg.replace(`stage ${route[k]!.did}`, stageName(route, k));
        named = k;
        break;
      }
    }
    return new C0Error(e.code, `${first} answered: ${msg}`, { detail: { ...detail, ...(named !== undefined ? { stage: route[named]!.did, index: named } : {}) } });
  }
  const why = `${e.code}: ${e.message}`.slice(0, 300);
  if (o.timedOut || (o.sent && e.code === 'NET_DEADLINE')) {
    return new C0Error('PIPELINE_NEXT_STAGE_FAILED', `${first} did not answer within ${o.deadlineMs} ms (${why})`, { detail: { stage: route[0]!.did, index: 0, cause: e.code, timedOut: true } });
  }
  if (!o.sent && e.code === 'NET_DIAL_FAILED') return new C0Error('NET_DIAL_FAILED', `${first} is not reachable: ${e.message}`, { detail: { ...detail, stage: route[0]!.did, index: 0 } });
  if (!o.sent && e.code === 'NET_PROTOCOL_UNSUPPORTED') return new C0Error('NET_PROTOCOL_UNSUPPORTED', `${first} does not serve ${PIPELINE_PROTOCOL} (is it a \`train stage\`?): ${e.message}`, { detail: { ...detail, stage: route[0]!.did, index: 0 } });
  return new C0Error('PIPELINE_NEXT_STAGE_FAILED', `${first} failed: ${why}`, { detail: { stage: route[0]!.did, index: 0, cause: e.code, timedOut: false } });
}

/**
 * A driver's view of a remote pipeline: the whole route as one StageRunner (stage 0 forwards through the rest). Each
 * micro-batch has the request's deadline (`deadlineMs`, default PIPELINE_LIMITS.deadlineMs), its retries included;
 * its failures name the stage (driverError). Before (QA qaTrn F3), a retry after the deadline opened a new stream, and
 * a stage 0 stopped mid-request was reported 71 s later as `NET_DIAL_FAILED … cannot open` naming its peer id.
 */
export function remotePipeline(net: Pick<Network, 'request'>, route: Array<string | RouteStage>, o: { deadlineMs?: number } = {}): StageRunner {
  const stages: RouteStage[] = route.map((r) => (typeof r === 'string' ? { did: r } : r));
  const dids = stages.map((r) => r.did);
  const ms = o.deadlineMs ?? LIMITS.deadlineMs;
  return async (x, batch, mb) => {
    checkSize(x.length * 8);
    const frames: CborValue[] = [{ batch, mb, route: dids.slice(1) }, ...splitPayload(weightsBytes(x))];
    return weightsFromBytes(joinBytes((await requestStage0(net, stages, frames, ms))!));
  };
}

/** Tries of a driver's dial to stage 0 that the stage's node closed as it opened (connectStage), and the pause before the next (ms, plus up to as much again at random). */
export const STAGE_DIAL = { tries: 3, pauseMs: 1_000 };

/**
 * A driver's connection to stage 0. A dial the stage's node closes as it opens (ECONNRESET, an early EOF: libp2p
 * takes at most 5 new connections a second from one host and 10 handshakes at once, and closes the others) is tried
 * again after a pause, STAGE_DIAL.tries in all; any other failure (refused: nothing listens) is not. The error is
 * NET_DIAL_FAILED naming the stage, and after resets it says what they most likely were. Before (QA qaTrn F2), 4 of 24
 * drivers started at once failed `NET_DIAL_FAILED … ECONNRESET` against a stage that was up, read as "not reachable".
 */
export async function connectStage(net: Pick<Network, 'dial'>, route: RouteStage[], o: { tries?: number; pauseMs?: number } = {}): Promise<void> {
  const tries = o.tries ?? STAGE_DIAL.tries;
  const pauseMs = o.pauseMs ?? STAGE_DIAL.pauseMs;
  for (let i = 1; ; i++) {
    try {
      await net.dial(route[0]!.addr ?? route[0]!.did);
      return;
    } catch (e) {
      const reset = handshakeFailure(e) === 'gone';
      if (reset && i < tries) {
        await new Promise((r) => setTimeout(r, pauseMs + Math.floor(Math.random() * pauseMs)));
        continue;
      }
      const err = e instanceof C0Error ? e : new C0Error('NET_DIAL_FAILED', (e as Error).message);
      const hint = reset ? ` (closed by its node as it opened, ${i} ${i === 1 ? 'try' : 'tries'}: a node takes at most 5 new connections a second from one host and 10 handshakes at once, so many drivers at once may be refused; try again)` : '';
      throw new C0Error('NET_DIAL_FAILED', `${stageName(route, 0)} is not reachable: ${err.message}${hint}`, { detail: { ...((err.detail ?? {}) as object), stage: route[0]!.did, index: 0, reset } });
    }
  }
}
