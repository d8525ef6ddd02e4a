/**
 * export.json as `market audit` reads it (docs/market.md §9): what it names must be what an export writes (a job's
 * address; records of known types, by address, in files of the directory), else EXPORT_MANIFEST_INVALID; and another
 * job's export.json fails `--complete` (AUDIT_EXPORT_OTHER_JOB), a warning without it. Before, a hand-made
 * {"job":"sha256:00","records":[]} passed `market audit --complete` with a warning only, and a record listed as
 * type "x" at "../../../../etc/passwd" was taken.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { RecordSet } from '../../../src/market/index.js';
import { T, type Opened } from '../../../src/records/index.js';
import { EXPORT_FORMAT, checkExport, readExportManifest } from '../../../src/cli/commands/market-export-manifest.js';
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
