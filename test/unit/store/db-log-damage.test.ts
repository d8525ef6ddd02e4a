/**
 * A damaged write-ahead log (src/store/wal-check.ts, openDb). LevelDB replays db/NNNNNN.log at the open and, with
 * paranoid_checks off, drops a record that fails its checksum with only a line in db/LOG, then deletes the log: a
 * flipped byte in the log lost acknowledged records without a word, even for a read-only `c0mpute jobs` (review s41 E
 * F1). Now such a log is refused STORE_CORRUPT before LevelDB opens, and nothing in db/ changes; a log whose end was
 * cut (a node killed mid-write) or zero-filled still opens, keeping every whole record. Real LevelDB in temp dirs.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDb, injectWriteFault, onStoreFatal, openDb, setRecovery, sub } from '../../../src/store/db.js';
import { checkLogFile, checkLogs, crc32c, type LogDamage } from '../../../src/store/wal-check.js';
import { C0Error } from '../../../src/errors.js';

const root = mkdtempSync(join(tmpdir(), 'c0-db-log-damage-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A database whose one log holds `values` (synced puts, k0, k1, …: never made a table), and that log's path. */
async function logged(values: Uint8Array[]): Promise<{ dir: string; log: string }> {
  const dir = join(root, `db${n++}`);
  let db = await openDb(dir);
  await closeDb(db);
  db = await openDb(dir); // (a fresh log, after the creation's)
  const s = sub(db, 'x');
  for (const [i, v] of values.entries()) await s.batch([{ type: 'put', key: `k${i}`, value: v }], { sync: true } as never);
  await closeDb(db);
  const logs = readdirSync(dir).filter((f) => f.endsWith('.log'));
  assert.equal(logs.length, 1, String(logs));
  const log = join(dir, logs[0]!);
  assert.ok(statSync(log).size > 0);
  return { dir, log };
}

const value = (i: number, size = 300) => new Uint8Array(size).fill(i + 1);

async function read(dir: string, count: number): Promise<(number | undefined)[]> {
  const db = await openDb(dir);
  try {
    const s = sub(db, 'x');
    const out: (number | undefined)[] = [];
    for (let i = 0; i < count; i++) out.push((await s.get(`k${i}`))?.[0]);
    return out;
  } finally {
    await closeDb(db);
  }
}

const listing = (dir: string) => Object.fromEntries(readdirSync(dir).filter((f) => f !== 'LOG' && f !== 'C0HOLDER').map((f) => [f, readFileSync(join(dir, f)).toString('base64')]));

describe("a damaged write-ahead log", () => {
  it('crc32c is the Castagnoli crc (its check value)', () => {
    assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
    assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  });

  it('a flipped byte in the middle of the log: STORE_CORRUPT naming the log; nothing in db/ changed, the records still there', async () => {
    const { dir, log } = await logged([value(0), value(1), value(2)]);
    const size = statSync(log).size;
    const buf = readFileSync(log);
    buf[Math.floor(size / 2)]! ^= 0xff;
    writeFileSync(log, buf);
    const before = listing(dir);
    await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT' && /write-ahead log \d+\.log .*checksum mismatch/.test(e.message));
    assert.deepEqual(listing(dir), before);
    // flipped back, every record is there: the refusal lost nothing
    buf[Math.floor(size / 2)]! ^= 0xff;
    writeFileSync(log, buf);
    assert.deepEqual(await read(dir, 3), [1, 2, 3]);
  });

  it('a flipped byte in a record spanning blocks (a 100 KiB value): STORE_CORRUPT', async () => {
    const { dir, log } = await logged([value(0), value(1, 100_000), value(2)]);
    const buf = readFileSync(log);
    assert.equal(checkLogFile(log), undefined);
    buf[40_000]! ^= 0x01;
    writeFileSync(log, buf);
    await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT');
  });

  it('a log cut mid-record (a node killed while writing) opens, keeping every whole record', async () => {
    const { dir, log } = await logged([value(0), value(1), value(2, 100_000)]);
    truncateSync(log, statSync(log).size - 5_000);
    assert.deepEqual(await read(dir, 3), [1, 2, undefined]);
  });

  it('a log ending in a partial record header opens too', async () => {
    const { dir, log } = await logged([value(0), value(1)]);
    const whole = statSync(log).size;
    appendFileSync(log, Buffer.from([1, 2, 3]));
    assert.equal(statSync(log).size, whole + 3);
    assert.deepEqual(await read(dir, 2), [1, 2]);
  });

  it('a log damaged while the daemon runs, found at the reopen after a failed write: the store is fatal with STORE_CORRUPT (the restart refuses it), nothing replayed', async () => {
    const { dir } = await logged([value(0)]);
    const db = await openDb(dir);
    let fatal: C0Error | undefined;
    onStoreFatal((e) => (fatal = e));
    try {
      await sub(db, 'x').batch([{ type: 'put', key: 'k1', value: value(1) }], { sync: true } as never);
      const live = join(dir, readdirSync(dir).filter((f) => f.endsWith('.log')).sort().at(-1)!);
      setRecovery(db, {
        firstDelayMs: 5,
        maxDelayMs: 20,
        probe: async () => true,
        beforeOpen: async () => {
          const buf = readFileSync(live);
          buf[Math.floor(buf.length / 2)]! ^= 0xff;
          writeFileSync(live, buf);
        },
      });
      injectWriteFault(db, Object.assign(new Error('IO error: No space left on device'), { code: 'LEVEL_IO_ERROR' }));
      await assert.rejects(sub(db, 'x').put('k2', value(2)));
      for (let i = 0; i < 500 && !fatal; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(fatal?.code, 'STORE_CORRUPT', String(fatal?.message));
      assert.ok(readdirSync(dir).includes(live.split('/').at(-1)!), 'the damaged log is kept');
    } finally {
      onStoreFatal(undefined);
      await closeDb(db);
    }
  });

  it('a zero-filled tail (a preallocated or unwritten end) opens, keeping every record', async () => {
    const { dir, log } = await logged([value(0), value(1)]);
    appendFileSync(log, Buffer.alloc(70_000));
    assert.equal(checkLogFile(log), undefined);
    assert.deepEqual(await read(dir, 2), [1, 2]);
  });

  it('a damaged length field in the last block (its record now running past the end): STORE_CORRUPT, not taken as the end (review r2 E S1)', async () => {
    const { dir, log } = await logged([value(0), value(1), value(2)]);
    const buf = readFileSync(log);
    assert.ok(buf.length < 32 * 1024, 'the whole log is its last block');
    const at = records(buf);
    assert.equal(at.length, 3);
    const len1 = buf.readUInt16LE(at[1]! + 4);
    buf.writeUInt16LE(20_000, at[1]! + 4); // record 1 now runs past the end of the file
    writeFileSync(log, buf);
    const before = listing(dir);
    await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT' && /bad record length/.test(e.message));
    assert.deepEqual(listing(dir), before);
    // the last record's length damaged the same way
    buf.writeUInt16LE(len1, at[1]! + 4);
    buf.writeUInt16LE(buf.readUInt16LE(at[2]! + 4) + 1, at[2]! + 4);
    writeFileSync(log, buf);
    assert.equal(checkLogFile(log)?.reason, 'bad record length');
  });

  it('a log cut at any byte of its last record opens (no shorter length matches a checksum by chance)', async () => {
    const { log } = await logged([value(0), value(1), value(2, 3000)]);
    const buf = readFileSync(log);
    const last = records(buf).at(-1)!;
    for (let cut = last + 7; cut < buf.length; cut++) assert.equal(checkCut(buf, cut, log), undefined, `cut at ${cut}`);
  });

  it('a torn zero-filled last record of the newest log (a power cut): opens with a warning, keeping every record before it (review r2 E S6)', async () => {
    const { dir, log } = await logged([value(0), value(1), value(2, 3000)]);
    const buf = readFileSync(log);
    const last = records(buf).at(-1)!;
    buf.fill(0, last + 7); // its header survived, its data never reached the disk
    writeFileSync(log, Buffer.concat([buf, Buffer.alloc(5000)]));
    const torn: LogDamage[] = [];
    const db = await openDb(dir, { onTornLog: (t) => torn.push(t) });
    await closeDb(db);
    assert.equal(torn.length, 1);
    assert.equal(torn[0]!.offset, last);
    assert.deepEqual(await read(dir, 3), [1, 2, undefined]);
  });

  it('a last record zero-filled from a 4 KiB page boundary in its data on: a torn end too', async () => {
    const { dir, log } = await logged([value(0), value(1), value(2, 9000)]);
    const buf = readFileSync(log);
    const page = Math.floor((buf.length - 1) / 4096) * 4096;
    assert.ok(page > records(buf).at(-1)! + 7);
    buf.fill(0, page);
    writeFileSync(log, buf);
    const torn: LogDamage[] = [];
    assert.equal(checkLogFile(log, undefined, { newest: true, torn: (t) => torn.push(t) }), undefined);
    assert.equal(torn.length, 1);
    assert.deepEqual(await read(dir, 3), [1, 2, undefined]);
  });

  it('zeros elsewhere stay damage: in an older log, before a later record, with data after them, or not reaching its last page', async () => {
    const { dir, log } = await logged([value(0), value(1, 3000), value(2, 9000)]);
    const clean = readFileSync(log);
    const at = records(clean);
    // the last record zero-filled, but the log is not the newest
    let buf = Buffer.from(clean).fill(0, at[2]! + 7);
    writeFileSync(log, buf);
    assert.equal(checkLogFile(log, undefined, { newest: false })?.reason, 'checksum mismatch');
    const newer = join(dir, '999999.log');
    writeFileSync(newer, Buffer.alloc(0));
    assert.equal(checkLogs(dir)?.reason, 'checksum mismatch');
    rmSync(newer);
    // a middle record zero-filled, a whole record after it
    buf = Buffer.from(clean).fill(0, at[1]! + 7, at[2]!);
    writeFileSync(log, buf);
    await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT');
    // the last record zero-filled, a stray byte after it
    buf = Buffer.concat([Buffer.from(clean).fill(0, at[2]! + 7), Buffer.alloc(100)]);
    buf[buf.length - 50] = 1;
    writeFileSync(log, buf);
    await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT');
    // zeros in the last record that stop short of its end, or start after its last page boundary
    buf = Buffer.from(clean).fill(0, at[2]! + 7, clean.length - 1);
    buf[buf.length - 1] = 7;
    writeFileSync(log, buf);
    await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT');
    buf = Buffer.from(clean).fill(0, Math.floor((clean.length - 1) / 4096) * 4096 + 10);
    buf[Math.floor((clean.length - 1) / 4096) * 4096]! ^= 0x40;
    writeFileSync(log, buf);
    await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT');
    // a flipped byte in the last record, no zeros
    buf = Buffer.from(clean);
    buf[buf.length - 10]! ^= 0x01;
    writeFileSync(log, buf);
    await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT');
    writeFileSync(log, clean);
    assert.deepEqual(await read(dir, 3), [1, 2, 3]);
  });
});

/** Where each record of a log under one block starts. */
function records(buf: Buffer): number[] {
  const out: number[] = [];
  for (let p = 0; p + 7 <= buf.length; p += 7 + buf.readUInt16LE(p + 4)) out.push(p);
  return out;
}

/** checkLogFile of the log `buf` cut at `cut` (a copy next to `log`). */
function checkCut(buf: Buffer, cut: number, log: string): LogDamage | undefined {
  const path = `${log}.cut`;
  writeFileSync(path, buf.subarray(0, cut));
  return checkLogFile(path);
}
