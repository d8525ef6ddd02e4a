/**
 * How the devnet starts its node processes (src/devnet/devnet.ts `Devnet.spawn`, `apiOf`), with a stand-in for
 * bin/c0mpute.js: the operator's `C0MPUTE_*` variables that would override the config the devnet writes are not
 * passed on (with C0MPUTE_API exported, every node after the first failed API_LISTEN_FAILED); a node that exits while
 * starting fails the devnet at once (not after the whole start-up wait, as a DEVNET_TIMEOUT) with DEVNET_NODE_EXITED,
 * its name and the end of its log in the message; and a failed devnet keeps its directory, logs included.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import { Devnet, dirFateLine } from '../../../src/devnet/devnet.js';
import { C0Error } from '../../../src/errors.js';
import { prepareOverlay } from '../../../src/devnet/overlay-scenario.js';
import { processStart } from '../../../src/node/daemon-info.js';

/** A stand-in node: prints the C0MPUTE_* variables it was given, then fails as a node whose API port is taken. */
const EXITS = `
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('C0MPUTE_')));
console.log('env ' + JSON.stringify(env));
console.error('error API_LISTEN_FAILED: cannot listen on 127.0.0.1:24199: address in use');
process.exit(3);
`;

function fakeBin(src: string): { bin: string; done: () => void } {
  const d = mkdtempSync(join(tmpdir(), 'c0-devnet-bin-'));
  const bin = join(d, 'node.cjs');
  writeFileSync(bin, src);
  return { bin, done: () => rmSync(d, { recursive: true, force: true }) };
}

const OPERATOR_ENV = {
  C0MPUTE_API: '127.0.0.1:24199',
  C0MPUTE_LISTEN: '/ip4/0.0.0.0/tcp/4001',
  C0MPUTE_ROLES: 'steward',
  C0MPUTE_OVERLAY: 'acme',
  C0MPUTE_BOOTSTRAP: '/ip4/10.0.0.1/tcp/4001/p2p/12D3KooWAbc',
  C0MPUTE_ANNOUNCE: '/ip4/10.0.0.1/tcp/4001',
  C0MPUTE_LOG_FORMAT: 'pretty',
  C0MPUTE_HOME: '/somewhere/else',
  C0MPUTE_PASSPHRASE_FILE: '/somewhere/pass',
  C0MPUTE_FAILPOINT: 'pool.after-dispatch',
  C0MPUTE_LOG_LEVEL: 'debug',
  C0MPUTE_DEBUG: '1',
};

test('a node that exits while starting fails the devnet at once, naming it, with its log’s end and without the operator’s node config', async () => {
  const { bin, done } = fakeBin(EXITS);
  const saved = Object.fromEntries(Object.keys(OPERATOR_ENV).map((k) => [k, process.env[k]]));
  Object.assign(process.env, OPERATOR_ENV);
  const net = new Devnet({ providers: 0, policy: 'balanced', jobs: 0, keep: false, bin, print: () => {} });
  try {
    const n = net.spawn('bantam', 'provider', { roles: ['provider'] }, 1);
    const t0 = Date.now();
    const err = await net.apiOf(n).then(
      () => assert.fail('apiOf resolved for a node that exited'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof C0Error, String(err));
    assert.equal(err.code, 'DEVNET_NODE_EXITED', err.message);
    assert.ok(Date.now() - t0 < 10_000, `noticed after ${Date.now() - t0} ms`);
    assert.match(err.message, /bantam exited with 3/);
    // the log's end is in the message itself: the cause is readable even where the directory is gone
    assert.match(err.message, /error API_LISTEN_FAILED: cannot listen on 127\.0\.0\.1:24199/);
    const env = JSON.parse(/^env (.*)$/m.exec(readFileSync(n.log, 'utf8'))![1]!) as Record<string, string>;
    for (const k of ['C0MPUTE_API', 'C0MPUTE_LISTEN', 'C0MPUTE_ROLES', 'C0MPUTE_OVERLAY', 'C0MPUTE_BOOTSTRAP', 'C0MPUTE_ANNOUNCE', 'C0MPUTE_LOG_FORMAT', 'C0MPUTE_HOME', 'C0MPUTE_PASSPHRASE_FILE', 'C0MPUTE_FAILPOINT']) {
      assert.equal(env[k], undefined, `${k} passed to a devnet node`);
    }
    // kept: the log level (documented) and stack traces; no passphrase (the devnet's keys have none)
    assert.deepEqual({ level: env.C0MPUTE_LOG_LEVEL, debug: env.C0MPUTE_DEBUG, pass: env.C0MPUTE_PASSPHRASE }, { level: 'debug', debug: '1', pass: '' });
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await net.stop();
    done();
  }
});

test('a devnet that failed keeps its directory (the nodes’ logs); one that ended well removes it', async () => {
  const { bin, done } = fakeBin(EXITS);
  const failed = new Devnet({ providers: 0, policy: 'balanced', jobs: 0, keep: false, bin, print: () => {} });
  try {
    failed.spawn('bantam', 'provider', {}, 1);
    await assert.rejects(failed.apiOf(failed.nodes[0]!), { code: 'DEVNET_NODE_EXITED' });
    await failed.stop({ failed: true });
    assert.ok(existsSync(join(failed.dir, 'bantam', 'node.log')), 'the failed devnet’s log was removed');
    const ok = new Devnet({ providers: 0, policy: 'balanced', jobs: 0, keep: false, bin, print: () => {} });
    await ok.stop();
    assert.equal(existsSync(ok.dir), false);
  } finally {
    rmSync(failed.dir, { recursive: true, force: true });
    done();
  }
});

test('stop is one routine: a second, concurrent stop (a signal’s, and the scenario’s own on its failure) gets the first one’s answer, and the directory is what it says', async () => {
  const { bin, done } = fakeBin(EXITS);
  const net = new Devnet({ providers: 0, policy: 'balanced', jobs: 0, keep: false, bin, print: () => {} });
  try {
    net.spawn('bantam', 'provider', {}, 1);
    const [first, second] = await Promise.all([net.stop(), net.stop({ failed: true })]);
    assert.equal(first, 'removed');
    assert.equal(second, 'removed', 'the later stop does not claim the directory is kept');
    assert.equal(existsSync(net.dir), false);
    assert.equal(dirFateLine(second, net.dir), `removed ${net.dir}`);
  } finally {
    rmSync(net.dir, { recursive: true, force: true });
    done();
  }
});

test('a relative --dir is taken from the working directory: the paths the nodes’ configs name under it are absolute', async () => {
  const root = mkdtempSync(join(tmpdir(), 'c0-devnet-rel-'));
  try {
    const given = join(relative(process.cwd(), root), 'net');
    assert.equal(isAbsolute(given), false);
    const net = new Devnet({ providers: 0, policy: 'balanced', jobs: 0, keep: true, dir: given, bin: 'unused', print: () => {} });
    // before, `run/ov` stayed relative and the overlay's swarm key was read as <node dir>/run/ov/acme.key: SWARM_KEY_UNREADABLE
    assert.equal(net.dir, join(root, 'net'));
    const { keyFile } = prepareOverlay(net.dir, [], () => new Uint8Array(32));
    assert.equal(keyFile, join(root, 'net', 'acme.key'));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a node an earlier, killed devnet left running on the --dir is refused by name and pid, before its config is rewritten', async () => {
  const root = mkdtempSync(join(tmpdir(), 'c0-devnet-left-'));
  // a live process standing for the leftover node (its daemon.json names it)
  const leftover = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  try {
    const net = new Devnet({ providers: 0, policy: 'balanced', jobs: 0, keep: true, dir: root, bin: 'unused', print: () => {} });
    const dir = join(root, 'atlas');
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.yaml'), 'roles: [provider]\n');
    await new Promise((ok) => leftover.once('spawn', ok));
    const info = { pid: leftover.pid, did: 'did:key:z6Mkx', api: '127.0.0.1:1', startedAt: 0, dataDir: realpathSync(dir) };
    const start = processStart(leftover.pid!);
    writeFileSync(join(dir, 'daemon.json'), JSON.stringify({ ...info, ...(start === undefined ? {} : { procStart: start }) }));
    // before, a second node was started there: DAEMON_RUNNING, said as DEVNET_NODE_EXITED with the leftover's log
    const refused = (kill: boolean) => (e: unknown) => e instanceof C0Error && e.code === 'DEVNET_NODE_RUNNING' && e.message.includes(`pid ${leftover.pid}`) && e.message.includes(`kill ${leftover.pid}`) === kill;
    assert.throws(() => net.spawn('atlas', 'provider', { roles: ['provider'] }, 1), refused(start !== undefined));
    // without the start time the pid may be another process's by now: no `kill` advice (review s57)
    writeFileSync(join(dir, 'daemon.json'), JSON.stringify(info));
    assert.throws(() => net.spawn('atlas', 'provider', { roles: ['provider'] }, 1), refused(false));
    assert.equal(readFileSync(join(dir, 'config.yaml'), 'utf8'), 'roles: [provider]\n');
    assert.equal(net.nodes.length, 0);
  } finally {
    leftover.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  }
});
