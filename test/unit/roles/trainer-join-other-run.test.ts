/**
 * Two workers that joined different runs of the same members (bundles differing only in seed) each refuse the other's
 * membership (TRAIN_BAD_MEMBERSHIP). The join keeps trying until its timeout (the peer may be restarted on the right
 * run), and its TRAIN_JOIN_TIMEOUT then names, for each member not joined, the last refusal it gave: "on another run
 * (TRAIN_BAD_MEMBERSHIP…)". Before, the refusal was swallowed and the timeout said only "members not joined: <did>".
 * Real libp2p on 127.0.0.1, real run directories.
 */
import '../../../src/polyfill.js';
import { after, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { C0Error } from '../../../src/errors.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { freePort } from '../../../src/devnet/devnet.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P } from '../market/fixtures.js';
import { tempDir } from '../ledger/helpers.js';

const dirs: Array<{ cleanup: () => void }> = [];
after(() => dirs.forEach((d) => d.cleanup()));

it('joined to another run of the same members: TRAIN_JOIN_TIMEOUT names the member and its refusal, TRAIN_BAD_MEMBERSHIP', async () => {
  const [A, B] = [P(610), P(611)];
  const members = [A, B].sort((x, y) => (x.did < y.did ? -1 : 1));
  const addrs = await Promise.all(members.map(async () => `/ip4/127.0.0.1/tcp/${await freePort()}`));
  const yaml = (seed: number) => stringify({ name: 'two-runs', model: { layers: [4, 8, 3] }, seed, stepsPerEpoch: 2, epochs: 1, members: members.map((m, i) => ({ did: m.did, addr: addrs[i] })) });
  const workers = members.map((m, i) => {
    const { bundle } = buildRun(yaml(i + 1), A.signer, NOW);
    const d = tempDir('c0-train-other-run-');
    dirs.push(d);
    return new TrainerWorker({ signer: m.signer, did: m.did, run: bundle.run, addrs: bundle.addrs, dir: d.dir, clock: () => Date.now(), log: silentLogger(), joinTimeoutMs: 3_000 });
  });
  try {
    await Promise.all(workers.map((w) => w.start()));
    const got = await Promise.allSettled(workers.map((w) => w.join()));
    got.forEach((g, i) => {
      assert.equal(g.status, 'rejected');
      const e = (g as PromiseRejectedResult).reason as C0Error;
      assert.equal(e.code, 'TRAIN_JOIN_TIMEOUT', String(e));
      const other = members[1 - i]!.did;
      assert.match(e.message, new RegExp(`members not joined: ${other}: on another run \\(TRAIN_BAD_MEMBERSHIP`));
      assert.deepEqual(e.detail, { members: { [other]: 'TRAIN_BAD_MEMBERSHIP' } });
    });
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
});
