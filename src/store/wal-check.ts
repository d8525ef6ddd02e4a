/**
 * LevelDB's write-ahead logs (db/NNNNNN.log) checked in JS before the database is opened (docs/node.md "A damaged
 * database").
 *
 * LevelDB replays its logs at the open, and with paranoid_checks off (classic-level has no option for it) a record
 * that fails its checksum is dropped with only a line in db/LOG ("(ignoring error) … dropping N bytes; Corruption:
 * checksum mismatch"); the log is then deleted. Acknowledged, synced records were lost without a word, even by a
 * read-only `c0mpute jobs`. So openDb reads every log first and refuses a damaged one (STORE_CORRUPT), before LevelDB
 * has changed anything.
 *
 * What is damage is what LevelDB's own log reader (db/log_reader.cc) reports as a corruption: a record whose checksum
 * fails, a record longer than its block before the end of the file, an unknown record type, fragments out of order.
 * What the reader takes as a plain end (a writer that died mid-record: a header cut short or a record running past
 * the end of the file, a first fragment with no last) and what it skips without a word (a zero header: a
 * preallocated, zero-filled region; a block's trailer under 7 bytes) is not damage: a node killed mid-write opens
 * normally and loses nothing it acknowledged.
 *
 * Two cases are told apart further than the reader does:
 * - A record running past the end of the file whose checksum matches its data at a shorter length: its length field
 *   is damaged, not its write cut off (a record really cut off matches at a shorter length only by chance, 2^-32 a
 *   length). The reader takes it as the end and drops every record after it: damage ("bad record length").
 * - A torn end after a power cut (a filesystem that zero-fills appended data that never reached the disk): the last
 *   record of the newest log fails its checksum, its data zeros from a 4 KiB page boundary (or from its start) on,
 *   and nothing but zeros follows to the end of the file. That record was never synced, so never acknowledged; the
 *   reader drops it and nothing else. Not damage: reported as `torn` (the open goes on, with a warning). The same
 *   anywhere else (an older log, a record followed by data, a mismatch with data in its last page) stays damage.
 *
 * The format (LevelDB doc/log_format.md): 32 KiB blocks; each record a 7-byte header (masked crc32c of the type byte
 * and the data, little-endian 32 bits; the data's length, 16 bits; the type: 1 full, 2 first, 3 middle, 4 last)
 * and its data; a record never crosses a block.
 */
import { closeSync, openSync, readSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const BLOCK = 32 * 1024;
const HEADER = 7;
const FULL = 1;
const FIRST = 2;
const MIDDLE = 3;
const LAST = 4;
/** Blocks read at a time. */
const CHUNK = 32 * BLOCK;

/** crc32c (Castagnoli, reflected 0x82f63b78), slicing by 8. */
const TABLES = (() => {
  const t = Array.from({ length: 8 }, () => new Int32Array(256));
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[0]![n] = c;
  }
  for (let n = 0; n < 256; n++) for (let k = 1; k < 8; k++) t[k]![n] = (t[k - 1]![n]! >>> 8) ^ t[0]![t[k - 1]![n]! & 0xff]!;
  return t;
})();

/** crc32c of buf[start, end). */
export function crc32c(buf: Uint8Array, start = 0, end = buf.length): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES as [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array];
  let c = -1;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const a = c ^ (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24));
    c = t7[a & 0xff]! ^ t6[(a >>> 8) & 0xff]! ^ t5[(a >>> 16) & 0xff]! ^ t4[a >>> 24]! ^ t3[buf[i + 4]!]! ^ t2[buf[i + 5]!]! ^ t1[buf[i + 6]!]! ^ t0[buf[i + 7]!]!;
  }
  for (; i < end; i++) c = t0[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** LevelDB's masked crc (util/crc32c.h Mask): what a log record's header holds. */
const mask = (crc: number): number => ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;

/** Where and why a log is damaged. */
export interface LogDamage {
  /** the log's file name (000006.log) */
  file: string;
  /** the byte the damaged record starts at */
  offset: number;
  /** LevelDB's words for it (checksum mismatch, bad record length, …) */
  reason: string;
}

/** Options of checkLogFile. */
export interface LogCheckOptions {
  /** the newest log of its database: only there is a zero-filled last record a torn end (the module comment) */
  newest?: boolean;
  /** told of a torn end (a zero-filled, unsynced last record LevelDB's open drops), which is not returned as damage */
  torn?: (t: LogDamage) => void;
}

/** A page of the filesystem's: what a power cut loses of a file's unsynced end, whole. */
const PAGE = 4096;

/** Whether the bytes of the file from `from` to its end are all zero. */
function zerosToEnd(fd: number, from: number): boolean {
  const buf = Buffer.allocUnsafe(CHUNK);
  for (let at = from; ; ) {
    const n = readSync(fd, buf, 0, CHUNK, at);
    if (n === 0) return true;
    for (let i = 0; i < n; i++) if (buf[i] !== 0) return false;
    at += n;
  }
}

/**
 * Whether the checksum `stored` (a header's) matches the type byte at buf[p + 6] with the first L bytes of the data
 * after the header, for some L < len that fits before `end`: a record running past the end whose length is damaged.
 */
function matchesShorter(buf: Buffer, p: number, end: number, stored: number): boolean {
  const t0 = TABLES[0]!;
  let c = t0[(-1 ^ buf[p + 6]!) & 0xff]! ^ (-1 >>> 8);
  if (mask(~c >>> 0) === stored) return true;
  for (let i = p + HEADER; i < end; i++) {
    c = t0[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
    if (mask(~c >>> 0) === stored) return true;
  }
  return false;
}

/** The damage LevelDB's log reader would report in the log at `path`, or undefined (an intact or torn-tailed log). */
export function checkLogFile(path: string, file = path, opts: LogCheckOptions = {}): LogDamage | undefined {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    let inFragment = false;
    for (let at = 0; ; ) {
      // a chunk of whole blocks (the last one may be short: the end of the file)
      let got = 0;
      while (got < CHUNK) {
        const n = readSync(fd, buf, got, CHUNK - got, at + got);
        if (n === 0) break;
        got += n;
      }
      if (got === 0) return undefined;
      for (let b = 0; b < got; b += BLOCK) {
        const end = Math.min(b + BLOCK, got);
        const eof = end - b < BLOCK; // LevelDB's reader: a block read short is the end of the file
        for (let p = b; end - p >= HEADER; ) {
          const len = buf[p + 4]! | (buf[p + 5]! << 8);
          const type = buf[p + 6]!;
          const damage = (reason: string): LogDamage => ({ file, offset: at + p, reason });
          if (p + HEADER + len > end) {
            // the writer died mid-record: the end, not damage; unless the checksum holds at a shorter length (a damaged
            // length field: LevelDB's reader would take it as the end and drop every record after it)
            if (eof) return matchesShorter(buf, p, end, buf.readUInt32LE(p)) ? damage('bad record length') : undefined;
            return damage('bad record length');
          }
          if (type === 0 && len === 0) break; // a zero-filled (preallocated) region: the rest of the block is skipped
          if (mask(crc32c(buf, p + 6, p + HEADER + len)) !== buf.readUInt32LE(p)) {
            // a torn end (a power cut): the newest log's last record, its data zeros from a page boundary (or its
            // start) on, nothing but zeros after it
            const dataEnd = at + p + HEADER + len;
            const zerosFrom = Math.max(at + p + HEADER, Math.floor((dataEnd - 1) / PAGE) * PAGE);
            if (opts.newest && len > 0 && zerosToEnd(fd, zerosFrom)) {
              opts.torn?.(damage('checksum mismatch in a zero-filled last record (a torn, unsynced end)'));
              return undefined;
            }
            return damage('checksum mismatch');
          }
          if (type === FULL || type === FIRST) {
            if (inFragment) return damage('partial record without end');
            inFragment = type === FIRST;
          } else if (type === MIDDLE || type === LAST) {
            if (!inFragment) return damage('missing start of fragmented record');
            inFragment = type === MIDDLE;
          } else return damage(`unknown record type ${type}`);
          p += HEADER + len;
        }
        if (eof) return undefined; // (a first fragment with no last at the end: the writer died; not damage)
      }
      at += got;
    }
  } finally {
    closeSync(fd);
  }
}

/** A LevelDB log's name. */
const LOG = /^\d+\.log$/;

/**
 * The first damaged log in the LevelDB directory `dir` (its logs in order), or undefined. A torn end of the newest log
 * (the module comment) is not damage: `torn` is told of it.
 */
export function checkLogs(dir: string, files: string[] = readdirSync(dir), torn?: (t: LogDamage) => void): LogDamage | undefined {
  const logs = files.filter((x) => LOG.test(x)).sort((a, b) => Number(a.slice(0, -4)) - Number(b.slice(0, -4)));
  for (const [i, f] of logs.entries()) {
    const d = checkLogFile(join(dir, f), f, { newest: i === logs.length - 1, ...(torn ? { torn } : {}) });
    if (d) return d;
  }
  return undefined;
}
