/** Shared helpers for the network end-to-end tests (real libp2p nodes on 127.0.0.1). */
import '../../src/polyfill.js';
import { Ed25519Signer, seal, T, type Advert, type Job, type Offer } from '../../src/records/index.js';
import { createNetwork, type Network, type NetworkOptions } from '../../src/net/node.js';
import type { Opened } from '../../src/records/envelope.js';

export const NOW = () => Date.now();

let seqBase = Date.now();
export function advert(signer: Ed25519Signer, over: Partial<Advert> = {}): Opened<Advert> {
  const now = Date.now();
  return seal(
    T.advert,
    {
      seq: ++seqBase,
      issuedAt: now,
      expiresAt: now + 600_000,
      workloads: ['infer.llm'],
      tier: 'standard',
      region: 'eu-west',
      hardware: { cpuCores: 8, memoryMiB: 16_384 },
      ...over,
    },
    signer,
  ) as Opened<Advert>;
}

export function offer(signer: Ed25519Signer, advertAddr: string, over: Partial<Offer> = {}): Opened<Offer> {
  const now = Date.now();
  return seal(
    T.offer,
    {
      job: 'sha256:' + 'ab'.repeat(32),
      advert: advertAddr,
      price: { amount: '1.5', currency: 'USD' },
      durationMs: 1000,
      issuedAt: now,
      startBy: now + 60_000,
      expiresAt: now + 30_000,
      ...over,
    },
    signer,
  ) as Opened<Offer>;
}

let jobSeq = 0;
/** A job for `infer.llm`, each with an input hash of its own (so each is a new record). */
export function job(signer: Ed25519Signer): Opened<Job> {
  const now = Date.now();
  return seal(
    T.job,
    {
      workload: 'infer.llm',
      requirements: { cpuCores: 1, memoryMiB: 64 },
      maxPrice: { amount: '1', currency: 'USD' },
      announcedAt: now,
      deadline: now + 600_000,
      timeoutMs: 60_000,
      input: { hash: 'sha256:' + (++jobSeq).toString(16).padStart(64, '0'), size: 1 },
      inputSealed: 'no',
    },
    signer,
  ) as Opened<Job>;
}

export async function startNode(over: Partial<NetworkOptions> = {}, signer = Ed25519Signer.generate()): Promise<Network & { signer: Ed25519Signer }> {
  const net = await createNetwork({
    signer,
    listen: ['/ip4/127.0.0.1/tcp/0'],
    loopback: true,
    gossip: { heartbeatInterval: 200 },
    // These tests wire their topologies by hand (a line through a withholding relay…): no DHT top-up unless asked.
    connectivity: { minPeers: 0 },
    ...over,
  });
  await net.start();
  return Object.assign(net, { signer });
}

export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Connect a→b and wait until each sees the other on `kind`'s topic. */
export async function link(a: Network, b: Network, kinds: Array<Parameters<Network['topicPeers']>[0]> = ['advert']): Promise<void> {
  await a.dial(b.addrs()[0]!);
  await waitFor(() => kinds.every((k) => a.topicPeers(k).includes(b.peerId.toString()) && b.topicPeers(k).includes(a.peerId.toString())), 5_000, 'topic subscriptions');
}

export async function stopAll(nets: Network[]): Promise<void> {
  await Promise.allSettled(nets.map((n) => n.stop()));
}
