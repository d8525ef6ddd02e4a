/**
 * `c0mpute reputation` on a node flooded with throwaway providers (review s43 R9 F2): with ~1,300 fake keys it
 * printed every provider sorted by DID, all `0.500 … untrusted 1`, the one this node had first-hand evidence about
 * wherever its DID sorted, and no counts. Now, against a running daemon and with none (the stores opened in-process),
 * the same: the first `--limit` providers, first-hand evidence first, with the console's counts line; `--all` lists
 * every one; `--json` gives the counts and every provider unless `--limit` says otherwise.
 *
 * The data directory's evidence is written before the daemon starts (real signed records, through the node's own
 * market service): 24 providers known only from receipts by buyers this node does not trust, and one provider whose
 * DID sorts after all of them, of a job this node published and accepted (first-hand).
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { offlineNode } from '../../src/cli/commands/node-actions.js';
import { loadIdentity } from '../../src/node/identity.js';
import { short } from '../../src/cli/short.js';
import { P, acceptance, advert, job, offer, receipt } from '../unit/market/fixtures.js';
import { Cluster, buyerConfig, c0mpute } from './node-helpers.js';

const c = new Cluster('rep-page');
after(() => c.destroy());

const FAKES = 24;

test('reputation lists the first-hand provider first with the counts, a page by default, every one with --all; daemon or not', async () => {
  const n = c.dataDir('n');
  const config = buyerConfig();
  writeFileSync(join(n.dir, 'config.yaml'), toYaml(config));
  const me = { did: n.did, signer: loadIdentity(n.dir).signer };
  const fakes = [...Array(FAKES)].map((_, i) => P(400 + i));
  const last = fakes.reduce((m, p) => (p.did > m ? p.did : m), '');
  let k = 500;
  while (P(k).did <= last) k++;
  const real = P(k); // sorts after every fake: the last line of the old listing
  const d = await offlineNode(n.dir);
  try {
    const m = d.overlay().market;
    for (const [i, prov] of fakes.entries()) {
      const j = job(P(300 + i));
      const o = offer(prov, j, advert(prov));
      const r = receipt(prov, P(300 + i), o);
      await m.addEvidence(r, o);
      await m.addEvidence(acceptance(P(300 + i), r, 'accepted'));
    }
    const j = job(me);
    const o = offer(real, j, advert(real));
    const r = receipt(real, me, o);
    await m.addEvidence(r, o);
    await m.addEvidence(acceptance(me, r, 'accepted'));
    assert.equal(m.reputation().get(real.did).firstHand, 1);
    assert.equal(m.reputation().all().length, FAKES + 1);
  } finally {
    await d.stop();
  }

  const counts = `${FAKES + 1} providers with evidence held; 1 with evidence that counts, 1 of them first-hand; ${FAKES} with untrusted evidence only`;
  // no daemon: the stores opened in-process (the slow path: one call)
  const offline = await c0mpute(n.dir, ['reputation', '--limit', '5']);
  assert.equal(offline.code, 0, offline.out + offline.err);
  const lines = offline.out.trim().split('\n');
  assert.equal(lines[0], counts);
  assert.ok(lines[2]!.startsWith(short(real.did)), `the first-hand provider first:\n${offline.out}`);
  assert.equal(lines.length, 1 + 1 + 5 + 1);
  assert.match(lines.at(-1)!, new RegExp(`the first 5 of ${FAKES + 1}.*--all`));

  await c.start('n', config);
  const page = await c0mpute(n.dir, ['reputation', '--limit', '5']);
  assert.equal(page.out, offline.out, 'the daemon lists what the stores read in-process list');
  const every = await c0mpute(n.dir, ['reputation', '--all']);
  assert.equal(every.code, 0, every.err);
  const rows = every.out.trim().split('\n').slice(2);
  assert.equal(rows.length, FAKES + 1, '--all lists every provider');
  assert.ok(rows[0]!.startsWith(short(real.did)));
  const json = await c0mpute(n.dir, ['reputation', '--json']);
  const l = JSON.parse(json.out) as { total: number; counted: number; firstHand: number; providers: Array<{ did: string }>; next?: string };
  assert.deepEqual([l.total, l.counted, l.firstHand, l.providers.length, l.providers[0]!.did, l.next], [FAKES + 1, 1, 1, FAKES + 1, real.did, undefined], '--json: the counts and every provider');
});
