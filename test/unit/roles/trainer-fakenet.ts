/**
 * Training workers on an in-process network, for unit tests of what one
 * member can do to the others (the all-reduce and commitment checks; trainer-net.ts
 * is the same idea with unhandle, for the view and mailbox checks): `request(to, protocol, frames)` calls the
 * target's /c0mpute/train/1 handler directly (a later `handle` replaces an
 * earlier one, as src/net/protocols.ts serve() does); `tap(from, to, frames)`
 * may rewrite a message, or drop it (null: the sender sees NET_DEADLINE).
 */
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import type { Opened } from '../../../src/records/envelope.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { TrainerWorker, type TrainerEvent } from '../../../src/roles/trainer/worker.js';
import type { TrainRun } from '../../../src/training/record-kinds.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, type Party } from '../market/fixtures.js';

export type Frames = CborValue[];
export type Tap = (from: string, to: string, frames: Frames) => Promise<Frames | null> | Frames | null;

export interface FakeNet {
  netFor(did: string): { did: string; handle: (protocol: string, h: ProtocolHandler) => Promise<void>; unhandle: (protocol: string) => Promise<void>; request: (to: string, protocol: string, frames: Frames, o?: { limits?: { deadlineMs?: number } }) => Promise<Frames> };
  /** Deliver frames to `to` as if `from` sent them (a hostile member's own message). */
  deliver(from: string, to: string, frames: Frames): Promise<Frames>;
}

export function fakeNet(tap?: Tap): FakeNet {
  const handlers = new Map<string, Map<string, ProtocolHandler>>();
  async function deliver(from: string, to: string, protocol: string, frames: Frames): Promise<Frames> {
    const h = handlers.get(to)?.get(protocol);
    if (!h) throw new C0Error('NET_DIAL_FAILED', 'fake: no handler');
    const out: Frames = [];
    const ctx = { peer: peerIdFromDid(from), signal: new AbortController().signal, send: async (f: CborValue) => void out.push(f) };
    try {
      await h(
        frames.map((f) => (f instanceof Uint8Array ? f.slice() : f)),
        ctx as never,
      );
    } catch (e) {
      if (e instanceof C0Error) throw new C0Error(e.code, e.message, { detail: { remote: true } });
      throw e;
    }
    return out;
  }
  return {
    netFor: (did) => ({
      did,
      handle: async (protocol, h) => {
        if (!handlers.has(did)) handlers.set(did, new Map());
        handlers.get(did)!.set(protocol, h);
      },
      unhandle: async (protocol) => {
        handlers.get(did)?.delete(protocol);
      },
      request: async (to, protocol, frames, o = {}) => {
        const fr = tap ? await tap(did, to, frames) : frames;
        if (fr === null) {
          await new Promise((r) => setTimeout(r, Math.min(o.limits?.deadlineMs ?? 1000, 200)));
          throw new C0Error('NET_DEADLINE', 'fake: dropped');
        }
        return deliver(did, to, protocol, fr);
      },
    }),
    deliver: (from, to, frames) => deliver(from, to, '/c0mpute/train/1', frames),
  };
}

export function makeRun(members: Party[], owner: Party, extra: Record<string, unknown> = {}): Opened<TrainRun> {
  const yaml = stringify({ name: 'hostile', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 3, epochs: 3, timeoutMs: 300, onFailure: 'continue', ...extra, members: members.map((m, i) => ({ did: m.did, addr: `/ip4/127.0.0.1/tcp/${i + 1}` })) });
  return buildRun(yaml, owner.signer, NOW).bundle.run;
}

/** Every member joins and runs to its end; the workers (stopped) and how each run() settled. */
export async function runAll(members: Party[], run: Opened<TrainRun>, net: FakeNet, onEvent?: (did: string, e: TrainerEvent) => void): Promise<{ workers: TrainerWorker[]; res: PromiseSettledResult<void>[] }> {
  const dirs = members.map(() => tempDir('c0-train-hostile-'));
  try {
    const workers = members.map((m, i) => new TrainerWorker({ signer: m.signer, did: m.did, run, addrs: {}, dir: dirs[i]!.dir, clock: () => Date.now(), net: net.netFor(m.did) as never, joinTimeoutMs: 10_000, onEvent: (e) => onEvent?.(m.did, e) }));
    for (const w of workers) await w.start();
    await Promise.all(workers.map((w) => w.join()));
    const res = await Promise.allSettled(workers.map((w) => w.run()));
    for (const w of workers) await w.stop();
    return { workers, res };
  } finally {
    for (const d of dirs) d.cleanup();
  }
}
