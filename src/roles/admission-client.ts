/**
 * The buyer's side of `/c0mpute/steward/1` `admit` (pool/1 §4): read the
 * steward's frames (queued → admitted | denied | expired) into an Admission,
 * and ask again by itself when the stream ends or fails without a verdict
 * after the claim was queued (the steward restarted, or the connection
 * broke). A queue is not a ledger event (§6.2), but the steward keeps its
 * queue on disk and recognises the same job asked again, so the claim keeps
 * its place in line (src/roles/steward.ts). Retries back off (doubling from
 * `initialMs` to `maxMs`, with jitter) until the job's deadline; then the
 * answer is `Expired` (reason STEWARD_UNREACHABLE). An error the steward
 * itself answered (detail.remote) is not retried, nor is a failure before
 * the claim was ever queued (the caller sees it as before).
 */
import { C0Error } from '../errors.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import type { Admission } from './buyer.js';

export interface AdmissionClientOptions {
  /** One admit stream: send the request, hand every answer frame to onFrame, resolve when the stream ends. */
  ask: (onFrame: (f: unknown) => void) => Promise<void>;
  /** The job's deadline: no asking after it. */
  deadline: number;
  clock: Clock;
  onQueued: (reason: string, reasons: string[]) => void;
  log?: Logger;
  sleep?: (ms: number) => Promise<void>;
  /** Backoff between re-asks (default 500 ms doubling to 5 s). */
  initialMs?: number;
  maxMs?: number;
  /** Jitter in [0, 1) (default Math.random); the wait is delay × (0.75 + jitter / 2). */
  random?: () => number;
}

type Frame = { t?: string; reason?: string; reasons?: string[]; reserved?: { uj: number; grade: string }; borrowed_uj?: number; entry?: string; admission?: unknown };

function verdictOf(x: Frame): Admission | undefined {
  if (x.t === 'admitted') {
    return { verdict: 'Admit', ...(x.reserved ? { reserved: x.reserved } : {}), ...(x.borrowed_uj === undefined ? {} : { borrowed_uj: x.borrowed_uj }), ...(x.entry ? { entry: x.entry } : {}), ...(x.admission instanceof Uint8Array ? { proof: x.admission } : {}) };
  }
  if (x.t === 'denied') return { verdict: 'Deny', ...(x.reason ? { reason: x.reason } : {}), reasons: x.reasons ?? [] };
  if (x.t === 'expired') return { verdict: 'Expired', ...(x.reason ? { reason: x.reason } : {}) };
  return undefined;
}

export async function requestAdmission(o: AdmissionClientOptions): Promise<Admission> {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const random = o.random ?? Math.random;
  const maxMs = o.maxMs ?? 5_000;
  let delay = o.initialMs ?? 500;
  let queued = false;
  for (let attempt = 1; ; attempt++) {
    let out: Admission | undefined;
    let failure: unknown;
    try {
      await o.ask((f) => {
        const x = (f ?? {}) as Frame;
        if (x.t === 'queued') {
          queued = true;
          o.onQueued(x.reason ?? '', x.reasons ?? []);
        } else out ??= verdictOf(x);
      });
    } catch (e) {
      failure = e;
    }
    if (out) return out;
    const remote = failure instanceof C0Error && (failure.detail as { remote?: unknown } | undefined)?.remote === true;
    if (!queued || remote) {
      if (failure) throw failure;
      throw new C0Error('STEWARD_NO_ANSWER', 'the steward closed the admission stream without a verdict');
    }
    const wait = Math.round(delay * (0.75 + random() / 2));
    if (o.clock() + wait >= o.deadline) return { verdict: 'Expired', reason: 'STEWARD_UNREACHABLE' };
    o.log?.warn({ attempt, waitMs: wait, err: failure instanceof Error ? failure.message : 'stream ended without a verdict' }, 'the admission stream ended while the claim was queued; asking the steward again');
    await sleep(wait);
    delay = Math.min(delay * 2, maxMs);
  }
}
