/**
 * The exec input lapse tests' shared rig (exec-input-lapse, exec-lapse-holder, exec-lapse-escape, exec-lapse-reopen):
 * a buyer, its jobs, and a one-slot provider on fake clocks whose log lines and strikes the test reads, with a job it
 * quoted and its buyer selected (selected), or an open order it claimed and its buyer took the claim (claimed); a
 * stream the test holds and ends (heldIO), and a whole job run through it (ranJob, or streamedJob for an input sent in
 * chunks while the clock moves).
 */
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Job } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { generateBoxKeyPair } from '../../../src/crypto/sealed-box.js';
import { parseConfig } from '../../../src/node/config.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { EstimatorMeter } from '../../../src/roles/provider/meters.js';
import { Provider } from '../../../src/roles/provider/provider.js';
import { QuoteBudget } from '../../../src/roles/provider/quote-budget.js';
import type { C0Error } from '../../../src/errors.js';
import type { ExecIO } from '../../../src/roles/provider/exec-input.js';
import type { ExecFrame } from '../../../src/roles/exec-protocol.js';

export const NOW = 1_800_000_000_000;
export const MiB = 1024 * 1024;
export const buyer = Ed25519Signer.generate();
export const buyerDid = didFromPublicKey(buyer.publicKey);
/** The buyer's PeerId: only it may open its jobs' exec streams (EXEC_NOT_BUYER). */
export const buyerPeer = peerIdFromDid(buyerDid).toString();
let nonce = 0;

/** A job of `size` bytes of input, each one new (an open order with `opts.order`; its deadline `opts.deadline`). */
export function makeJob(size: number, signer = buyer, opts: { order?: boolean; deadline?: number } = {}): Opened<Job> {
  return seal(
    T.job,
    {
      workload: 'builtin.sha256',
      requirements: {},
      maxPrice: { amount: '0.01', currency: 'USD' },
      announcedAt: NOW,
      deadline: opts.deadline ?? NOW + 600_000,
      timeoutMs: 10_000,
      input: { hash: hashHex(new Uint8Array(size)), size },
      inputSealed: 'no',
      nonce: Uint8Array.of(nonce++ & 0xff, (nonce >> 8) & 0xff),
      ...(opts.order ? { order: {} } : {}),
    },
    signer,
  );
}

/**
 * A one-slot provider on fake clocks (wall `clock` at NOW, monotonic `mono` at 0), put in `live` for the test to stop.
 * Each run takes `work.ms` on the monotonic clock (advanced as its receipt is kept; 0 unless the test sets it).
 */
export function lapseProvider(live: Provider[]) {
  const signer = Ed25519Signer.generate();
  const clock = fakeClock(NOW);
  const mono = fakeClock(0);
  const work = { ms: 0 };
  const lines: Array<Record<string, unknown>> = [];
  const struck: string[] = [];
  const config = parseConfig({
    roles: ['provider'],
    provider: { slots: 1, workloads: { 'builtin.sha256': { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 1000, perInputMiBMs: 0 } } } },
  }).provider!;
  const provider = new Provider({
    signer,
    did: didFromPublicKey(signer.publicKey),
    config,
    hardware: { cpuCores: 4, memoryMiB: 8192 },
    meter: new EstimatorMeter(50, clock),
    box: generateBoxKeyPair(),
    clock,
    monoClock: mono,
    log: pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as never) }),
    eligibility: () => [],
    publish: async () => 1,
    state: { loadSeq: async () => 0, saveSeq: async () => {}, hasReceiptFor: async () => false },
    onReceipt: async () => void mono.advance(work.ms),
    strike: (peer) => void struck.push(peer),
    quoteBudget: new QuoteBudget({ windowMs: config.offerLifetimeMs, clock, monoClock: mono }),
  });
  live.push(provider);
  return { provider, signer, clock, mono, lines, struck, config, work };
}

/** A job of `size` that `p` quoted and its buyer selected, and the exec header that runs it. */
export async function selected(p: Provider, size: number) {
  const job = makeJob(size);
  const offer = await p.onJob(job);
  assert.ok(offer, 'the provider offers on the job');
  const selection = seal(T.selection, { job: job.address, buyer: buyerDid, policy: 'balanced', winner: offer.address, considered: [{ provider: offer.signer, offer: offer.address }], decidedAt: NOW }, buyer);
  return { job, offer, selection, header: { t: 'exec', job: job.bytes, offer: offer.bytes, selection: selection.bytes } };
}

/**
 * An open order of `size` (deadline `deadlineMs` from NOW, default 30 days) that the provider signing with `signer`
 * claimed at NOW (what its claimer signs: job, advert, price, issuedAt; no start-by) and its buyer took (a first-claim
 * selection), and the exec header that runs it: the claim stands where an auction's offer stands.
 */
export function claimed(signer: Ed25519Signer, size: number, deadlineMs = 30 * 86_400_000) {
  const job = makeJob(size, buyer, { order: true, deadline: NOW + deadlineMs });
  const claim = seal(T.claim, { job: job.address, advert: job.address, price: { amount: '0.001', currency: 'USD' }, issuedAt: NOW }, signer);
  const provider = didFromPublicKey(signer.publicKey);
  const selection = seal(T.selection, { job: job.address, buyer: buyerDid, policy: 'first-claim', winner: claim.address, considered: [{ provider, offer: claim.address }], arrivals: [{ seq: 1, receivedAt: NOW, provider, claim: claim.address }], decidedAt: NOW }, buyer);
  return { job, claim, selection, header: { t: 'exec', job: job.bytes, offer: claim.bytes, selection: selection.bytes } };
}

/**
 * A stream whose caller sends `frames` and then waits until the test acts: `send(frame)` answers the pending read (or
 * the next), `end(why)` fails it (a reset, a deadline: a NET_DEADLINE also aborts the stream's signal, as the stream's
 * own deadline does), `end()` ends it cleanly. `waiting` settles at the first read that finds nothing sent.
 */
export function heldIO(frames: unknown[], peer: string | undefined) {
  const ac = new AbortController();
  const queue = [...frames];
  const out: ExecFrame[] = [];
  let settle: { resolve: (v: unknown) => void; reject: (e: unknown) => void } | undefined;
  let reading!: () => void;
  const waiting = new Promise<void>((r) => (reading = r));
  const io: ExecIO = {
    next: () => {
      if (queue.length) return Promise.resolve(queue.shift());
      reading();
      return new Promise((resolve, reject) => (settle = { resolve, reject }));
    },
    send: async (f) => void out.push(f),
    signal: ac.signal,
    reserve: () => {},
    setDeadline: () => {},
    ...(peer !== undefined ? { peer } : {}),
  };
  const take = () => {
    const s = settle;
    settle = undefined;
    return s;
  };
  const send = (frame: unknown) => {
    const s = take();
    if (s) s.resolve(frame);
    else queue.push(frame);
  };
  const end = (why?: C0Error) => {
    if (!why) return take()?.resolve(undefined);
    if (why.code === 'NET_DEADLINE') ac.abort(why);
    take()?.reject(why);
  };
  const refusals = () => out.filter((f) => f.t === 'refused').map((f) => (f as { code: string }).code);
  return { io, out, send, end, waiting, refusals };
}

/**
 * Run one whole job of `size` bytes of input through `p` for the buyer, its input streamed after `ready` in 256 KiB
 * chunks over `uploadMs` on `mono` (the provider's monotonic clock, which `wall` follows); its frames.
 */
export async function streamedJob(p: Provider, mono: { advance(ms: number): void }, wall: { advance(ms: number): void }, size: number, uploadMs: number): Promise<ExecFrame[]> {
  const { header } = await selected(p, size);
  const h = heldIO([header], buyerPeer);
  const served = p.handleExec(h.io);
  await h.waiting;
  const chunk = 256 * 1024;
  const n = Math.ceil(size / chunk);
  for (let i = 0; i < n; i++) {
    mono.advance(uploadMs / n);
    wall.advance(uploadMs / n);
    h.send({ t: 'input', data: new Uint8Array(Math.min(chunk, size - i * chunk)) });
    await new Promise((r) => setImmediate(r));
  }
  h.end();
  await served;
  assert.ok(h.out.some((f) => f.t === 'receipt'), `the job ran: ${JSON.stringify(h.out.map((f) => f.t))}`);
  return h.out;
}

/** Run one whole job of `size` bytes of input (inline, its header then its end) through `p` for the buyer; its frames. */
export async function ranJob(p: Provider, size = 100): Promise<ExecFrame[]> {
  const { header } = await selected(p, size);
  const h = heldIO([{ ...header, input: new Uint8Array(size) }, undefined], buyerPeer);
  await p.handleExec(h.io);
  assert.ok(h.out.some((f) => f.t === 'receipt'), `the job ran: ${JSON.stringify(h.out.map((f) => f.t))}`);
  return h.out;
}
