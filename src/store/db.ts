/**
 * LevelDB, opened once per process per path (STACK pitfall 7: a second open of
 * the same path in one process fails and drops the first handle's lock).
 * Every store takes a sublevel of the one database under the node's data dir.
 *
 * Writes that must not be lost go through `db.batch(ops, { sync: true })`:
 * acknowledged only after the batch is on disk.
 */
import { resolve } from 'node:path';
import { mkdirSync } from 'node:fs';
import { Level } from 'level';
import { C0Error } from '../errors.js';

export type Db = Level<string, Uint8Array>;

interface Entry {
  db: Db;
  refs: number;
}
const open = new Map<string, Entry>();
const opening = new Map<string, Promise<Db>>();

/** Open (or share) the database at `path`. Pair every call with closeDb(). */
export async function openDb(path: string): Promise<Db> {
  const key = resolve(path);
  const e = open.get(key);
  if (e) {
    e.refs++;
    return e.db;
  }
  const pending = opening.get(key);
  if (pending) {
    const db = await pending;
    open.get(key)!.refs++;
    return db;
  }
  const p = (async () => {
    mkdirSync(key, { recursive: true });
    const db: Db = new Level<string, Uint8Array>(key, { valueEncoding: 'view' });
    try {
      await db.open();
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      if ((err as { code?: string }).code === 'LEVEL_DATABASE_NOT_OPEN' && cause?.code === 'LEVEL_LOCKED') {
        throw new C0Error('STORE_LOCKED', `the database at ${key} is in use by another process (is a daemon running on this data directory?)`, { cause: err });
      }
      throw new C0Error('STORE_OPEN_FAILED', `cannot open the database at ${key}: ${(err as Error).message}`, { cause: err });
    }
    open.set(key, { db, refs: 1 });
    return db;
  })();
  opening.set(key, p);
  try {
    return await p;
  } finally {
    opening.delete(key);
  }
}

export async function closeDb(db: Db): Promise<void> {
  for (const [key, e] of open) {
    if (e.db === db) {
      e.refs--;
      if (e.refs <= 0) {
        open.delete(key);
        await db.close();
      }
      return;
    }
  }
}

/** A named sublevel with binary values. */
export function sub(db: Db, name: string) {
  return db.sublevel<string, Uint8Array>(name, { valueEncoding: 'view' });
}

export type Sub = ReturnType<typeof sub>;

/** A time (ms since the epoch; any safe integer ≥ 0) as 16 decimal digits, so keys sort by time. */
export const timeKey = (t: number): string => String(Math.max(0, Math.floor(t))).padStart(16, '0');

/**
 * Write a batch and resolve only once it is on disk (classic-level's `sync`
 * option, which abstract-level's types do not declare).
 */
export async function syncBatch(db: Db, ops: unknown[]): Promise<void> {
  await db.batch(ops as never, { sync: true } as never);
}
