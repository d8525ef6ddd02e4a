import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import type { Opened } from '../../src/records/envelope.js';
import { advert, link, startNode, stopAll, waitFor, sleep } from './net-helpers.js';
import { isCoalescing } from '../../src/net/write-coalesce.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

test('an advert published in a 4-node line reaches every node exactly once', async () => {
  for (let i = 0; i < 4; i++) nets.push(await startNode());
  for (let i = 0; i < 3; i++) await link(nets[i]!, nets[i + 1]!);
  // also a cross link, so the record arrives by two paths
  await link(nets[0]!, nets[2]!);
  const got: Array<Opened[]> = nets.map(() => []);
  nets.forEach((n, i) => n.subscribe('advert', (rec) => void got[i]!.push(rec)));
  const a = advert((nets[0] as Network & { signer: never }).signer);
  await sleep(300); // mesh heartbeat
  const res = await nets[0]!.publish('advert', a.bytes);
  assert.ok(res.recipients >= 1);
  await waitFor(() => got.slice(1).every((g) => g.length >= 1), 5_000, 'delivery');
  await sleep(300);
  for (const g of got.slice(1)) {
    assert.equal(g.length, 1);
    assert.equal(g[0]!.address, a.address);
  }
  assert.equal(got[0]!.length, 0, 'the publisher does not receive its own record');
  // every connection, dialled or accepted, sends its turn's frames in one write (write-coalesce.ts)
  const conns = nets.flatMap((n) => n.libp2p.getConnections());
  assert.ok(conns.length >= 8);
  assert.ok(conns.every(isCoalescing));
});
