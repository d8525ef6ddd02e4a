/**
 * A real training worker whose network is a stub that hands the test its /c0mpute/train/1 handler: what a member can
 * make it hold (trainer-mailbox-bound, trainer-chunk-parts). `send` delivers a message head and `bytes` of payload in
 * PAYLOAD_FRAME parts from `from`; `done` stops the worker and removes its directory.
 */
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { PAYLOAD_FRAME } from '../../../src/training/transport.js';
import { fakeClock } from '../../../src/util/clock.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, type Party } from '../market/fixtures.js';

/** An assert.rejects check: a C0Error with `code` (and a message matching `re`). */
export const refused = (code: string, re?: RegExp) => (e: unknown) => e instanceof C0Error && e.code === code && (!re || re.test(e.message));

export interface HandlerRig {
  w: TrainerWorker;
  /** The run's envelope (its record's `members` in ring order). */
  run: ReturnType<typeof buildRun>['bundle']['run'];
  send(from: string, head: Record<string, CborValue>, bytes: number): Promise<void>;
  /** After the test, in its `finally`: removes the worker's directory. */
  cleanup(): void;
}

/** The worker of `members[0]` in a run of `members` on a model of `layers` (3 steps an epoch, 2 epochs), started. */
export async function handlerRig(name: string, layers: number[], members: readonly Party[]): Promise<HandlerRig> {
  const [me] = members;
  const t = tempDir(`c0-train-${name}-`);
  try {
    const yaml = stringify({ name, model: { layers }, seed: 1, stepsPerEpoch: 3, epochs: 2, members: members.map((m, i) => ({ did: m.did, addr: `/ip4/127.0.0.1/tcp/${i + 1}` })) });
    const run = buildRun(yaml, me!.signer, NOW).bundle.run;
    let handler: ProtocolHandler | undefined;
    const net = { did: me!.did, handle: async (_p: string, h: ProtocolHandler) => void (handler = h), request: async () => [] };
    const w = new TrainerWorker({ signer: me!.signer, did: me!.did, run, addrs: {}, dir: t.dir, clock: fakeClock(NOW), net: net as never });
    await w.start();
    const send = async (from: string, head: Record<string, CborValue>, bytes: number): Promise<void> =>
      await handler!([head, ...Array.from({ length: Math.ceil(bytes / PAYLOAD_FRAME) }, (_, i) => new Uint8Array(Math.min(PAYLOAD_FRAME, bytes - i * PAYLOAD_FRAME)).fill(7))], {
        peer: peerIdFromDid(from),
        signal: new AbortController().signal,
        send: async () => {},
      } as never);
    return { w, run, send, cleanup: () => t.cleanup() };
  } catch (e) {
    t.cleanup();
    throw e;
  }
}
