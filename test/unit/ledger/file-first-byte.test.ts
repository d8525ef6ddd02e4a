/**
 * A ledger file is a CBOR map: a file that does not begin with one (JSON, text, empty, zeros) is refused on its first
 * byte, saying so, and a file on disk is not read whole first (src/ledger/file.ts; QA ffLedger F6, F7: a JSON file was
 * "length beyond 2^32 (at byte 0)", and a 1.5 GB file of zeros took 28 s and 3 GB of memory to refuse).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, ftruncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { C0Error } from '../../../src/errors.js';
import { decodeLedgerFile, readLedgerFile } from '../../../src/ledger/file.js';
import { encodeCanonical } from '../../../src/records/cbor.js';
import { tempDir } from './helpers.js';

const t = tempDir('c0-ledger-file-');
after(() => t.cleanup());

function refusal(fn: () => unknown): C0Error {
  try {
    fn();
  } catch (e) {
    return e as C0Error;
  }
  assert.fail('not refused');
}

describe('a file that is not a CBOR map', () => {
  it('is LEDGER_FILE_MALFORMED saying what it begins with', () => {
    const json = refusal(() => decodeLedgerFile(new TextEncoder().encode('{"format":"c0mpute.ledger/1"}')));
    assert.equal(json.code, 'LEDGER_FILE_MALFORMED');
    assert.match(json.message, /a ledger file is a CBOR map, and it begins with byte 0x7b \('\{': a JSON file\?\)/);
    assert.match(refusal(() => decodeLedgerFile(new Uint8Array(0))).message, /the file is empty/);
  });

  it('on disk, is refused on its first byte without being read whole (a 3 GiB sparse file of zeros)', () => {
    const p = join(t.dir, 'zeros');
    const fd = openSync(p, 'w');
    ftruncateSync(fd, 3 * 1024 ** 3);
    closeSync(fd);
    const e = refusal(() => readLedgerFile(p));
    assert.equal(e.code, 'LEDGER_FILE_MALFORMED', e.message);
    assert.match(e.message, /begins with byte 0x00/);
    writeFileSync(join(t.dir, 'empty'), '');
    assert.equal(refusal(() => readLedgerFile(join(t.dir, 'empty'))).code, 'LEDGER_FILE_MALFORMED');
  });
});

describe('a ledger file with a key this build does not know', () => {
  it('is LEDGER_FILE_MALFORMED naming the key, not verified with that part passed over', () => {
    const ok = { format: 'c0mpute.ledger/1', entries: [], receipts: [] };
    assert.deepEqual(decodeLedgerFile(encodeCanonical(ok)), { entries: [], receipts: [] });
    const e = refusal(() => decodeLedgerFile(encodeCanonical({ ...ok, revoked: [new Uint8Array([1])] })));
    assert.equal(e.code, 'LEDGER_FILE_MALFORMED');
    assert.equal(e.field, 'revoked');
    assert.match(e.message, /unknown key "revoked" in a c0mpute\.ledger\/1 file: this build reads format, entries, receipts, head only/);
  });
});
