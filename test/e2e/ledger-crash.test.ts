/**
 * Crash safety of the ledger: a child process appends entries and reports
 * each acknowledgement on stdout; the parent SIGKILLs it at a random moment,
 * many times. After every kill the ledger replays cleanly and holds every
 * acknowledged entry (at the acknowledged address).
 *
 * The same file is the child when C0_LEDGER_CRASH_DIR is set. Loading the
 * ledger's modules is most of a child's life, so the next child is started
 * while the current one runs and is checked: it loads, then waits for "go" on
 * stdin before it opens the ledger (after the parent has closed it).
 *
 * `npm test` kills 15 times: each kill lands in the append loop, and a torn
 * batch (the head and the entry written apart) fails within 1 to 5 runs;
 * C0_CRASH_RUNS=120 runs the long count.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Ed25519Signer, didFromPublicKey } from '../../src/records/index.js';
import { Ledger } from '../../src/ledger/index.js';
import { tempDir } from '../unit/ledger/helpers.js';

const RUNS = Number(process.env.C0_CRASH_RUNS ?? 15);

async function child(dir: string, seedHex: string): Promise<void> {
  const signer = new Ed25519Signer(new Uint8Array(Buffer.from(seedHex, 'hex')));
  // started ahead of its turn: the ledger is opened only once the parent says so
  await new Promise<void>((resolve, reject) => {
    let got = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d: string) => {
      got += d;
      if (got.includes('go\n')) resolve();
    });
    process.stdin.on('end', () => reject(new Error('the parent went away')));
  });
  const l = await Ledger.open(dir, { signer });
  process.stdout.write(`ready ${l.length}\n`);
  for (;;) {
    const seq = l.length;
    const prevClaim = `c${seq - 1}`;
    const ev = l.book.open.has(prevClaim)
      ? { event: 'Released' as const, claim: prevClaim, actual: { uj: 1000 + seq, grade: 'HwShunt' as const } }
      : { event: 'Admitted' as const, claim: `c${seq}`, entitlement: 'team-a', class: 'crash.test', reserved: { uj: 2000 + seq, grade: 'ModelBased' as const }, devices: 1, borrowed_uj: 0 };
    const r = await l.append(ev);
    process.stdout.write(`ack ${r.seq} ${r.address}\n`);
  }
}

type Child = ChildProcessByStdio<Writable, Readable, Readable>;

/** A child loading its modules; it opens the ledger in `dir` when runOnce says "go". */
function spawnChild(dir: string, seedHex: string): Child {
  const env: NodeJS.ProcessEnv = { ...process.env, C0_LEDGER_CRASH_DIR: dir, C0_LEDGER_CRASH_SEED: seedHex };
  delete env.NODE_TEST_CONTEXT; // the child is a plain process, not a test runner child
  return spawn(process.execPath, [fileURLToPath(import.meta.url)], { env, stdio: ['pipe', 'pipe', 'pipe'] });
}

function runOnce(p: Child): Promise<{ acks: Map<number, string>; startLength: number }> {
  return new Promise((resolve, reject) => {
    const acks = new Map<number, string>();
    let startLength = -1;
    let buf = '';
    let err = '';
    let timer: NodeJS.Timeout | undefined;
    p.stdout.setEncoding('utf8');
    p.stdout.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const [kind, a, b] = line.split(' ');
        if (kind === 'ready') {
          startLength = Number(a);
          timer = setTimeout(() => p.kill('SIGKILL'), 2 + Math.floor(Math.random() * 150));
        } else if (kind === 'ack') acks.set(Number(a), b!);
      }
    });
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.stdin.on('error', () => undefined); // a child that died early is reported by 'exit'
    p.stdin.write('go\n');
    p.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (signal !== 'SIGKILL') reject(new Error(`child exited ${code} ${signal}: ${err}`));
      else resolve({ acks, startLength });
    });
  });
}

const childDir = process.env.C0_LEDGER_CRASH_DIR;
if (childDir) {
  await child(childDir, process.env.C0_LEDGER_CRASH_SEED!);
} else {
  test(`ledger survives SIGKILL at random moments (${RUNS} runs)`, { timeout: 120_000 }, async () => {
    const t = tempDir('c0-crash-');
    const seed = randomBytes(32);
    const steward = didFromPublicKey(new Ed25519Signer(seed).publicKey);
    let acked = 0;
    let expectedLength = 0;
    let next: Child | undefined;
    try {
      next = spawnChild(t.dir, seed.toString('hex'));
      for (let run = 0; run < RUNS; run++) {
        const done = runOnce(next!);
        next = run + 1 < RUNS ? spawnChild(t.dir, seed.toString('hex')) : undefined;
        const { acks, startLength } = await done;
        assert.equal(startLength, expectedLength, `run ${run}: the child reopened a ledger of ${startLength} entries, ${expectedLength} were there`);
        acked += acks.size;
        // replay cleanly and hold every acknowledged entry
        // Ledger.open replays and verifies every entry (and the stored head) or throws LEDGER_CORRUPT
        const l = await Ledger.open(t.dir, { steward });
        for (const [seq, address] of acks) assert.equal(await l.addressAt(seq), address, `run ${run}: acknowledged entry ${seq} lost or changed`);
        const maxAck = Math.max(startLength - 1, ...acks.keys());
        assert.ok(l.length >= maxAck + 1, `run ${run}: length ${l.length} below acknowledged ${maxAck + 1}`);
        assert.ok(l.length <= maxAck + 2, `run ${run}: at most one unacknowledged entry can be in flight`);
        expectedLength = l.length;
        await l.close();
      }
      console.log(`# crash test: ${RUNS} runs, ${acked} acknowledged appends, ${expectedLength} entries in the final ledger, all replayed cleanly`);
    } finally {
      next?.kill('SIGKILL'); // the one started ahead, after a failed run
      t.cleanup();
    }
  });
}
