/**
 * What a data directory records of its starts, and what reads it (src/cli/commands/node-actions.ts; docs/config.md
 * "Which file, and when there is none"), with the real CLI and real daemons on loopback. Review s41:
 * - rvE F4: a start that FAILED rewrote last-start.json (and `--new-identity` its DID) before the node started, so the
 *   next correct start was refused CONFIG_MISSING ("pass --config try.yaml again"). Now only a start that succeeded
 *   writes them.
 * - rvE F6: an emptied config.yaml started on the defaults (a CONFIG_EMPTY warning) though the last start ran with it
 *   while it set something; now refused as a missing one is.
 * - rvB F3: offline `jobs` / `reputation` read config.yaml or the built-in defaults, not the --config the daemon last
 *   ran with; now that one (CONFIG_MISSING when it is gone), and with no eviction bound.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { once } from 'node:events';
import { loadConfig } from '../../../src/node/config.js';
import { SIDE_BY_SIDE, startRig } from './start-rig.js';

const { root, c0, start, keysInit } = startRig('c0-start-record-');

/** A loopback port held for the test's length: a start whose API is there fails API_LISTEN_FAILED. */
async function takenPort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  after(() => s.close());
  return (s.address() as AddressInfo).port;
}

const record = (d: string) => JSON.parse(readFileSync(join(d, 'last-start.json'), 'utf8')) as { config: string | null; via: string; at: string; empty?: boolean };
const didOf = (d: string) => readFileSync(join(d, 'identity.did'), 'utf8').trim();

// each case has its own data directory, config files and taken port: the groups run side by side
describe('what a start records', SIDE_BY_SIDE, () => {
  describe('a start that fails records nothing (rvE F4)', () => {
    it('a failed `start --config try.yaml` leaves the record of the last start that succeeded: the next plain start starts', async () => {
      const d = await keysInit('failed-try');
      const first = await start(d);
      assert.ok(first.started, first.out);
      const before = record(d);
      assert.equal(before.config, null);
      const port = await takenPort();
      const tryCfg = join(root, 'try.yaml');
      writeFileSync(tryCfg, 'roles: [buyer]\n');
      const failed = await start(d, '--config', tryCfg, '--api', `127.0.0.1:${port}`);
      assert.equal(failed.code, 3, failed.out);
      assert.match(failed.out, /error API_LISTEN_FAILED/);
      assert.deepEqual(record(d), before, 'the failed start rewrote last-start.json');
      const next = await start(d);
      assert.ok(next.started, next.out);
      assert.doesNotMatch(next.out, /CONFIG_MISSING/);
    });

    it('a failed `start --new-identity` keeps the recorded DID; one that starts records the new one', async () => {
      const d = await keysInit('new-identity');
      const first = await start(d);
      assert.ok(first.started, first.out);
      const old = didOf(d);
      const other = await keysInit('other-key');
      copyFileSync(join(other, 'identity.key'), join(d, 'identity.key'));
      const port = await takenPort();
      const failed = await start(d, '--new-identity', '--api', `127.0.0.1:${port}`);
      assert.equal(failed.code, 3, failed.out);
      assert.equal(didOf(d), old, 'the failed start recorded the new DID');
      const plain = await start(d);
      assert.equal(plain.code, 3, plain.out);
      assert.match(plain.out, /error KEY_MISMATCH/);
      const adopted = await start(d, '--new-identity');
      assert.ok(adopted.started, adopted.out);
      assert.notEqual(didOf(d), old);
      assert.equal(didOf(d), /c0mpute node (did:key:\S+)/.exec(adopted.out)?.[1]);
    });
  });

  describe('an emptied config (rvE F6)', () => {
    it('a config.yaml emptied since the last start, which ran with it, is CONFIG_MISSING (it started on the defaults)', async () => {
      const d = await keysInit('emptied');
      writeFileSync(join(d, 'config.yaml'), 'roles: [witness]\n');
      const first = await start(d);
      assert.ok(first.started, first.out);
      assert.equal(record(d).via, 'config.yaml');
      writeFileSync(join(d, 'config.yaml'), '# nothing here\n');
      const r = await start(d);
      assert.equal(r.code, 3, r.out);
      assert.ok(!r.started);
      assert.match(r.out, /error CONFIG_MISSING: .*config\.yaml sets nothing .*the last start on .* ran with it while it set something: restore its content.*init --force-config/);
    });

    it('a config.yaml that set nothing at the last start too still starts, with the CONFIG_EMPTY warning', async () => {
      const d = await keysInit('empty-always');
      writeFileSync(join(d, 'config.yaml'), '');
      const first = await start(d);
      assert.ok(first.started, first.out);
      assert.match(first.out, /CONFIG_EMPTY/);
      assert.equal(record(d).empty, true);
      const again = await start(d);
      assert.ok(again.started, again.out);
      assert.match(again.out, /CONFIG_EMPTY/);
    });
  });

  describe('offline display commands read the config the daemon last ran with (rvB F3)', () => {
    it('offline `jobs` and `reputation` use the last start’s --config; with it gone, the defaults with a warning (review r2E S5)', async () => {
      const d = await keysInit('offline');
      const cfg = join(root, 'elsewhere.yaml');
      // an overlay name only this file gives: `jobs --overlay named` finds it only when the file is read
      writeFileSync(cfg, 'roles: [buyer]\nnetwork:\n  overlay: named\n');
      const first = await start(d, '--config', cfg);
      assert.ok(first.started, first.out);
      const jobs = await c0(d, 'jobs', '--overlay', 'named');
      assert.equal(jobs.code, 0, jobs.out);
      assert.match(jobs.out, /no jobs yet published by this node \(the jobs it ran as a provider: the console’s Jobs page/);
      const rep = await c0(d, 'reputation', '--overlay', 'named', '--json');
      assert.equal(rep.code, 0, rep.out);
      rmSync(cfg);
      const gone = await c0(d, 'reputation');
      assert.equal(gone.code, 0, gone.out);
      assert.match(gone.out, /warning CONFIG_MISSING: the last start on .* ran with --config .*elsewhere\.yaml, which is not there now: showing .* the built-in defaults instead/);
      assert.match(gone.out, /start the node once with --config/);
    });

    it('a display node lets nothing go: no eviction bound, no history pruning', async () => {
      const { keepEverything } = await import('../../../src/cli/commands/node-actions.js');
      const config = loadConfig({ file: undefined, env: {} });
      keepEverything(config);
      assert.equal(config.reputation.maxEvidence, Number.MAX_SAFE_INTEGER);
      assert.equal(config.reputation.maxEvidenceBytes, Number.MAX_SAFE_INTEGER);
      assert.equal(config.market.maxAdverts, Number.MAX_SAFE_INTEGER);
      assert.equal(config.history.keepDays, 0);
      assert.equal(config.history.maxQuotedJobs, Number.MAX_SAFE_INTEGER);
      assert.equal(config.history.maxQuotedJobBytes, Number.MAX_SAFE_INTEGER);
      assert.deepEqual(config.witnessRecords, { maxEvidence: Number.MAX_SAFE_INTEGER, maxReceipts: Number.MAX_SAFE_INTEGER, maxWitnesses: Number.MAX_SAFE_INTEGER });
    });
  });
});
