/**
 * The data directory's stamp (docs/node.md "Which build wrote a data directory"): `<data-dir>/data-format.json`,
 * written atomically at every start of a node that writes the directory (a daemon, a one-shot `run`), once its
 * database is open (its lock held, so no other process of ours writes the stamp meanwhile):
 *
 *   { "format": 1, "highestFormat": 1, "version": "0.1.0", "build": "1e383ad7d182", "writtenAt": "2026-…Z" }
 *
 * `format` is the data format of the build that last started on it: DATA_FORMAT, raised whenever a build stores
 * something an earlier build would misread or not maintain (an index it does not keep up, a layout it does not
 * read). `highestFormat` is the highest any build wrote, kept by every build, so a later build coming back after an
 * earlier one ran sees it. At start, compared with what the stamp held (`checkStamp`, pure):
 *
 * - none, on a directory that held a database: written by a build before stamps: `DATA_DIR_UPGRADED` (info).
 * - `format` below this build's: upgraded (`DATA_DIR_UPGRADED`, info); but with `highestFormat` at or above it, a
 *   build of this format or a later one wrote it before an earlier build ran on it (a rollback, then this build
 *   again): `DATA_DIR_ROLLED_BACK` (warn), since what the earlier build stored was not kept as this one keeps it.
 * - `format` above this build's: written by a later build; running this one on it is not supported:
 *   `DATA_DIR_NEWER_FORMAT` (warn), naming that build. The start goes on (nothing is refused: a rollback may be the
 *   operator's way out of a bad upgrade); the stamp keeps `highestFormat`, so the later build says so when it is back,
 *   and this build says DATA_DIR_NEWER_FORMAT again at each of its starts while `highestFormat` is above its format.
 *   A daemon keeps what its start said at warn for `status` (Daemon.dataDirWarnings).
 * - the same format, another build: said at info (which build wrote it last, and when), nothing more.
 *
 * A build before stamps writes none and reads none: what it does to a directory a stamped build wrote is not seen
 * (the stamp is the one that build left). A stamp that does not parse is rewritten, said at warn; one that is not a
 * regular file (a FIFO, a device, a directory) is neither read nor written, said at warn, and the start goes on.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic-file.js';
import { readRegularFile } from '../util/bounded-read.js';
import type { BuildIdentity } from '../util/build-id.js';

/** The data format this build writes (see the module's comment for when it is raised). */
export const DATA_FORMAT = 1;
export const STAMP_FILE = 'data-format.json';

export interface DataStamp {
  format: number;
  highestFormat: number;
  version: string;
  build?: string;
  /** ISO 8601, wall clock */
  writtenAt: string;
}

export interface StampCheck {
  level: 'info' | 'warn';
  code: 'DATA_DIR_UPGRADED' | 'DATA_DIR_ROLLED_BACK' | 'DATA_DIR_NEWER_FORMAT' | 'DATA_DIR_BUILD_CHANGED' | 'DATA_DIR_STAMP_UNREADABLE';
  message: string;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** The most a stamp file is read of (one is about 130 bytes): a larger file is unreadable, not read whole. */
const STAMP_MAX_BYTES = 4096;

/**
 * The stamp as read (undefined: none), or 'unreadable'. Read only as a regular file, opened without blocking: a FIFO
 * there blocked the start for ever in a synchronous read, the database's lock held and deaf to SIGTERM.
 */
export function readStamp(dataDir: string): DataStamp | 'unreadable' | undefined {
  const p = join(dataDir, STAMP_FILE);
  if (!existsSync(p)) return undefined;
  try {
    const read = readRegularFile(p, STAMP_MAX_BYTES);
    if (!('bytes' in read)) return 'unreadable';
    const v = JSON.parse(new TextDecoder().decode(read.bytes)) as Partial<DataStamp>;
    if (!isCount(v.format) || typeof v.version !== 'string' || typeof v.writtenAt !== 'string') return 'unreadable';
    return { format: v.format, highestFormat: isCount(v.highestFormat) ? Math.max(v.highestFormat, v.format) : v.format, version: v.version.slice(0, 64), ...(typeof v.build === 'string' ? { build: v.build.slice(0, 64) } : {}), writtenAt: v.writtenAt.slice(0, 64) };
  } catch {
    return 'unreadable';
  }
}

const builtBy = (s: Pick<DataStamp, 'version' | 'build'>) => `${s.version} (build ${s.build ?? 'unknown'})`;

/**
 * What a start says of the stamp it found (`held`: none, or unreadable), given whether the directory held data before
 * (`hadData`) and this build; and the stamp it writes. Pure.
 */
export function checkStamp(held: DataStamp | 'unreadable' | undefined, hadData: boolean, self: BuildIdentity, now: number, format = DATA_FORMAT): { said?: StampCheck; write: DataStamp } {
  const prior = held === 'unreadable' || held === undefined ? undefined : held;
  const write: DataStamp = { format, highestFormat: Math.max(format, prior?.highestFormat ?? 0), version: self.version, ...(self.build ? { build: self.build } : {}), writtenAt: new Date(now).toISOString() };
  const me = builtBy(self);
  if (held === 'unreadable') return { said: { level: 'warn', code: 'DATA_DIR_STAMP_UNREADABLE', message: `${STAMP_FILE} does not read as a stamp; rewritten by ${me}, data format ${format}` }, write };
  if (!prior) {
    return hadData ? { said: { level: 'info', code: 'DATA_DIR_UPGRADED', message: `data directory written by a build before data-format stamps; now data format ${format}, by ${me}` }, write } : { write };
  }
  const last = `${builtBy(prior)} at ${prior.writtenAt}`;
  // a later build wrote it before, and this earlier one (or another as early) ran on it since: said again at every
  // start while it runs, as the first time (QA qaTrn F10: the rewritten stamp never said it again)
  if (prior.format <= format && prior.highestFormat > format) {
    return { said: { level: 'warn', code: 'DATA_DIR_NEWER_FORMAT', message: `data directory written before by a later build, data format ${prior.highestFormat}, and last by ${last}, data format ${prior.format}; this build, ${me}, knows data format ${format}: running an earlier build on it is not supported (docs/node.md "Which build wrote a data directory"): what it stores may not be kept as the later build keeps it` }, write };
  }
  if (prior.format > format) {
    return { said: { level: 'warn', code: 'DATA_DIR_NEWER_FORMAT', message: `data directory last written by a later build, data format ${prior.format}, ${last}; this build, ${me}, knows data format ${format}: running an earlier build on it is not supported (docs/node.md "Which build wrote a data directory"): what it stores may not be kept as the later build keeps it` }, write };
  }
  if (prior.format < format) {
    if (prior.highestFormat >= format) {
      return { said: { level: 'warn', code: 'DATA_DIR_ROLLED_BACK', message: `data directory written by an earlier build since a build of data format ${prior.highestFormat} ran on it: ${last}, data format ${prior.format}; what it stored since is not kept as this build keeps it (docs/node.md "Which build wrote a data directory")` }, write };
    }
    return { said: { level: 'info', code: 'DATA_DIR_UPGRADED', message: `data directory upgraded from data format ${prior.format} (${last}) to ${format}, by ${me}` }, write };
  }
  if (prior.build !== self.build || prior.version !== self.version) {
    return { said: { level: 'info', code: 'DATA_DIR_BUILD_CHANGED', message: `data directory last written by ${last}; now ${me}, the same data format ${format}` }, write };
  }
  return { write };
}

/** Whether a stamp may be written at `p`: nothing there, or a regular file (through links). A FIFO is written in place, and blocks. */
function replaceable(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return true;
  }
}

/** Check and write the stamp of `dataDir` at start; what it said is logged by the caller. A write that fails is said, not fatal. */
export function stampDataDir(dataDir: string, hadData: boolean, self: BuildIdentity, now: number): { said?: StampCheck; written: boolean } {
  const p = join(dataDir, STAMP_FILE);
  if (!replaceable(p)) {
    return { said: { level: 'warn', code: 'DATA_DIR_STAMP_UNREADABLE', message: `${p} is not a regular file (a FIFO, a device or a directory): neither read nor written, so no start can tell which build wrote this directory; remove it` }, written: false };
  }
  const { said, write } = checkStamp(readStamp(dataDir), hadData, self, now);
  try {
    writeFileAtomic(p, JSON.stringify(write, null, 1) + '\n');
    return { ...(said ? { said } : {}), written: true };
  } catch {
    return { ...(said ? { said } : {}), written: false };
  }
}
