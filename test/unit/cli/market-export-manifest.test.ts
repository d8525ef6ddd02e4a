/**
 * export.json as `market audit` reads it (docs/market.md §9): what it names must be what an export writes (a job's
 * address; records of known types, by address, in files of the directory), else EXPORT_MANIFEST_INVALID; and another
 * job's export.json fails `--complete` (AUDIT_EXPORT_OTHER_JOB), a warning without it. Before, a hand-made
 * {"job":"sha256:00","records":[]} passed `market audit --complete` with a warning only, and a record listed as
 * type "x" at "../../../../etc/passwd" was taken.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { RecordSet } from '../../../src/market/index.js';
import { T, type Opened } from '../../../src/records/index.js';
import { EXPORT_FORMAT, EXPORT_MANIFEST_MAX_BYTES, checkExport, readExportManifest } from '../../../src/cli/commands/market-export-manifest.js';
import { RECORD_DIR_BOUNDS, loadRecordDir } from '../../../src/cli/commands/market-actions.js';
import { MAX_ENVELOPE_BYTES } from '../../../src/records/envelope.js';
import { P, job } from '../market/fixtures.js';

const J = job(P(950));
const OTHER_JOB = job(P(951));
const root = mkdtempSync(join(tmpdir(), 'c0-export-manifest-'));
after(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
/** a directory with an export.json of `fields` over a well-formed one */
function dirWith(fields: Record<string, unknown>): string {
  const dir = join(root, `d${n++}`);
  mkdirSync(dir);
  const m = { format: EXPORT_FORMAT, job: J.address, records: [{ type: T.job, address: J.address, file: `job-${J.address.slice(7)}.cbor` }], missing: [], selections: [], auditArgs: [], ...fields };
  writeFileSync(join(dir, 'export.json'), JSON.stringify(m));
  return dir;
}
function invalid(dir: string): void {
  assert.throws(() => readExportManifest(dir), (e: unknown) => e instanceof C0Error && e.code === 'EXPORT_MANIFEST_INVALID');
}

describe('export.json: what it names is checked', () => {
  it('a well-formed one is read', () => {
    assert.equal(readExportManifest(dirWith({}))?.job, J.address);
  });

  it('a job that is not an address is EXPORT_MANIFEST_INVALID', () => {
    invalid(dirWith({ job: 'sha256:00' }));
    invalid(dirWith({ job: J.address.toUpperCase() }));
  });

  it('a listed record whose address is not one, of an unknown type, or in a file outside the directory is EXPORT_MANIFEST_INVALID', () => {
    invalid(dirWith({ records: [{ type: T.job, address: 'sha256:00', file: 'a.cbor' }] }));
    invalid(dirWith({ records: [{ type: 'x', address: J.address, file: 'a.cbor' }] }));
    invalid(dirWith({ records: [{ type: 'c0mpute.job/1\nresult    reproduces', address: J.address, file: 'a.cbor' }] }));
    invalid(dirWith({ records: [{ type: T.job, address: J.address, file: '../../../../etc/passwd' }] }));
  });

  it('a missing record or a selection that is not an address is EXPORT_MANIFEST_INVALID', () => {
    invalid(dirWith({ missing: [{ address: 'x', what: 'y' }] }));
    invalid(dirWith({ selections: ['sha256:00'] }));
  });

  it('audit settings of the wrong shape are EXPORT_MANIFEST_INVALID, not a crash when the audit compares them', () => {
    // second-round review: these ended `market audit` with exit 70 "a.trustedBuyers is not iterable"
    const ok = { trustedBuyers: [P(952).did], dealtWith: false, secondHandWeight: 0.5, skewMs: 30_000 };
    assert.deepEqual(readExportManifest(dirWith({ audit: ok }))?.audit, ok);
    assert.ok(readExportManifest(dirWith({ audit: { ...ok, stewards: [P(953).did] } })));
    for (const audit of ['x', 5, null, [], { ...ok, trustedBuyers: null }, { ...ok, trustedBuyers: ['not-a-did'] }, { ...ok, stewards: 5 }, { ...ok, stewards: ['x'] }, { ...ok, dealtWith: 'yes' }, { ...ok, skewMs: 'soon' }, { ...ok, secondHandWeight: null }]) {
      invalid(dirWith({ audit }));
    }
  });

  it('each selection’s settings (decisions) and where they come from (settings) are read when well-formed, else EXPORT_MANIFEST_INVALID', () => {
    const audit = { trustedBuyers: [P(952).did], dealtWith: false, secondHandWeight: 0.5, skewMs: 45_000 };
    const d = { selection: J.address, decider: P(954).did, settings: 'recorded', audit, auditArgs: ['--trusted-buyers', P(952).did, '--skew-ms', '45000'] };
    assert.deepEqual(readExportManifest(dirWith({ settings: 'recorded', decisions: [d] }))?.decisions, [d]);
    assert.ok(readExportManifest(dirWith({ decisions: [{ ...d, decider: undefined, settings: 'current' }] })), 'a daemon before the decider was given');
    invalid(dirWith({ settings: 'yes' }));
    for (const x of [5, [5], [{ ...d, selection: 'x' }], [{ ...d, decider: 'x' }], [{ ...d, settings: 'then' }], [{ ...d, audit: { ...audit, skewMs: 'x' } }], [{ ...d, auditArgs: [5] }], [{ ...d, auditArgs: undefined }]]) invalid(dirWith({ decisions: x }));
  });

  it('an export.json that is not a regular file, or larger than any export writes, is EXPORT_MANIFEST_INVALID unread', () => {
    // second-round review: a FIFO blocked the audit for ever, a link to /dev/zero filled its memory
    const fifo = join(root, `d${n++}`);
    mkdirSync(fifo);
    execFileSync('mkfifo', [join(fifo, 'export.json')]);
    invalid(fifo);
    const zero = join(root, `d${n++}`);
    mkdirSync(zero);
    symlinkSync('/dev/zero', join(zero, 'export.json'));
    invalid(zero);
    const dir = join(root, `d${n++}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'export.json'), '');
    truncateSync(join(dir, 'export.json'), EXPORT_MANIFEST_MAX_BYTES + 1);
    invalid(dir);
    const gone = join(root, `d${n++}`);
    mkdirSync(gone);
    symlinkSync(join(gone, 'nowhere'), join(gone, 'export.json'));
    assert.equal(readExportManifest(gone), undefined, 'a dangling link is no export.json');
  });
});

describe('the records directory', () => {
  it('a dangling link, a link loop or a file larger than any record is refused, the rest read', () => {
    // second-round review: a dangling link or a loop ended select, explain, audit and probe with exit 70 (ENOENT, ELOOP)
    const dir = join(root, `d${n++}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'job.cbor'), J.bytes);
    symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling'));
    symlinkSync(join(dir, 'loop'), join(dir, 'loop'));
    writeFileSync(join(dir, 'big'), '');
    truncateSync(join(dir, 'big'), MAX_ENVELOPE_BYTES + 1);
    const { records, refused, read } = loadRecordDir(dir);
    assert.ok(records.get(J.address), 'the record beside them is read');
    assert.equal(read, 4);
    assert.deepEqual(
      refused.map((r) => [r.file, r.code]),
      [['big', 'ENVELOPE_TOO_LARGE'], ['dangling', 'INPUT_UNREADABLE'], ['loop', 'INPUT_UNREADABLE']],
    );
  });

  it('links back to the directory are not walked into, a FIFO is skipped unread, a file whose size says 0 is read no further than a record (second-round review: two links back ran until the heap ran out)', () => {
    const dir = join(root, `d${n++}`);
    mkdirSync(join(dir, 'sub'), { recursive: true });
    writeFileSync(join(dir, 'sub', 'job.cbor'), J.bytes);
    symlinkSync(dir, join(dir, 'back1'));
    symlinkSync(dir, join(dir, 'back2'));
    symlinkSync('/', join(dir, 'root'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    const procBig = existsSync('/proc/kallsyms') ? '/proc/kallsyms' : undefined;
    if (procBig) symlinkSync(procBig, join(dir, 'proc'));
    const { records, refused, read } = loadRecordDir(dir);
    assert.ok(records.get(J.address), 'the record in the subdirectory is read, once');
    assert.equal(read, procBig ? 2 : 1, 'links to directories and the FIFO are not files read');
    assert.deepEqual(
      refused.map((r) => [r.file, r.code]),
      procBig ? [['proc', 'ENVELOPE_TOO_LARGE']] : [],
    );
  });

  it('a directory nested past the bound is RECORDS_DIR_TOO_LARGE', () => {
    const dir = join(root, `d${n++}`);
    mkdirSync(join(dir, ...Array.from({ length: RECORD_DIR_BOUNDS.maxDepth + 1 }, () => 'x')), { recursive: true });
    assert.throws(() => loadRecordDir(dir), (e: unknown) => e instanceof C0Error && e.code === 'RECORDS_DIR_TOO_LARGE');
  });
});

describe('export.json of another job', () => {
  const records = new RecordSet([J as Opened]);
  it('fails --complete (AUDIT_EXPORT_OTHER_JOB), a warning without it', () => {
    const m = readExportManifest(dirWith({ job: OTHER_JOB.address, records: [] }))!;
    const strict = checkExport('d', m, records, { complete: true, job: J.address });
    assert.deepEqual(strict.problems.map((p) => p.code), ['AUDIT_EXPORT_OTHER_JOB']);
    assert.deepEqual(strict.warnings, []);
    const lenient = checkExport('d', m, records, { job: J.address });
    assert.deepEqual(lenient.problems, []);
    assert.deepEqual(lenient.warnings.map((w) => w.code), ['AUDIT_EXPORT_OTHER_JOB']);
  });

  it('its own job passes --complete', () => {
    const m = readExportManifest(dirWith({}))!;
    const x = checkExport('d', m, records, { complete: true, job: J.address });
    assert.deepEqual(x.problems, []);
    assert.deepEqual(x.warnings, []);
  });
});
