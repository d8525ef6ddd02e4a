/**
 * The settings a selection was decided under, kept with it and exported (docs/market.md §9 "Exporting a job's
 * records"). QA (reputation and audit pass, F2): `market export` wrote the node's settings of the day it exported as
 * "the deciding node's settings", so after the operator took a trusted buyer out of its config the audit command it
 * printed failed an honest decision (AUDIT_DIFFERENT_WINNER). Now the buyer keeps its settings with each selection it
 * signs (RecordStore.putDecision, dropped with the selection), the export gives those, and a selection with none kept
 * (one decided before this version, or another node's) gets the settings of now, said to be so in the output, in
 * export.json and by `market audit`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDb, openDb } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { exportJobRecords } from '../../../src/node/control.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { decodeAuditSettings, encodeAuditSettings, type AuditSettings } from '../../../src/market/audit-settings.js';
import { exportAuditLines, exportDecisions } from '../../../src/cli/commands/market-export-actions.js';
import { checkExport, type ExportDecision, type ExportManifest } from '../../../src/cli/commands/market-export-manifest.js';
import { RecordSet } from '../../../src/market/index.js';
import { seal, T, type Job, type Offer, type Opened, type Selection } from '../../../src/records/index.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';

const BUYER = P(340);
const PROV = P(341);
const TRUSTED = P(342);
const STEWARD = P(343);
const DAY = 24 * 3600_000;

const then: AuditSettings = { trustedBuyers: [TRUSTED.did], dealtWith: false, secondHandWeight: 0.5, skewMs: 45_000 };
const now: AuditSettings = { trustedBuyers: [], dealtWith: false, secondHandWeight: 0.5, skewMs: 30_000 };

const selection = (j: Opened<Job>, o: Opened<Offer>, at: number, signer = BUYER): Opened<Selection> =>
  seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'cheapest', winner: o.address, considered: [{ provider: PROV.did, offer: o.address }], decidedAt: at }, signer.signer) as Opened<Selection>;

test('a selection this node signed keeps the settings it was decided under; the export gives those, not the settings of the day it exports', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-decisions-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db, '', { clock: () => NOW, self: BUYER.did });
    const j = job(BUYER, { nonce: new Uint8Array([1, 91]), announcedAt: NOW, deadline: NOW + 60_000 });
    await records.put(j);
    const o = offer(PROV, j, advert(PROV));
    // decided under `then` (a trusted buyer, a wider skew window), kept in the selection's batch with its offer
    const kept = selection(j, o, NOW + 100);
    assert.equal(await records.putDecision(kept, encodeAuditSettings(then), [o]), 2);
    assert.equal(await records.has(o.address), true, 'the offer it considered, in the same batch');
    // one from before this version (no settings kept), and a steward's
    const older = selection(j, o, NOW + 200);
    await records.put(older);
    const stewards = selection(j, o, NOW + 300, STEWARD);
    await records.put(stewards);
    assert.deepEqual(decodeAuditSettings((await records.decisionOf(kept.address))!), then);
    assert.equal(await records.decisionOf(older.address), undefined);

    // the node's config changed since: no trusted buyer, the default window
    const node = { did: BUYER.did, records, market: { auditSettings: (s: readonly string[] = []) => ({ ...now, ...(s.length ? { stewards: [...s] } : {}) }) }, d: { network: {} } } as unknown as OverlayNode;
    const summary = (await exportJobRecords(node, { job: j.address, records: [j, kept, older, stewards, o], missing: [] }, () => undefined)) as { audit: AuditSettings; settings: string; decisions: ExportDecision[] };
    assert.deepEqual(summary.decisions, [
      { selection: kept.address, decider: BUYER.did, settings: 'recorded', audit: then },
      { selection: older.address, decider: BUYER.did, settings: 'current', audit: now },
      { selection: stewards.address, decider: STEWARD.did, settings: 'current', audit: now },
    ]);
    assert.deepEqual([summary.settings, summary.audit], ['current', now], 'the latest decision’s');

    // what `market export` prints and writes: the kept settings' options; the others said to be this node's now
    const decisions = exportDecisions(summary, [kept.address, older.address, stewards.address]);
    assert.deepEqual(decisions[0]!.auditArgs, ['--trusted-buyers', TRUSTED.did, '--skew-ms', '45000']);
    assert.deepEqual(decisions[1]!.auditArgs, []);
    const lines = exportAuditLines(decisions, 'exp');
    assert.equal(lines[0], `audit      c0mpute market audit --selection ${kept.address} --records exp --trusted-buyers ${TRUSTED.did} --skew-ms 45000`);
    assert.equal(lines[1], `audit      c0mpute market audit --selection ${older.address} --records exp`);
    assert.match(lines[3]!, /each decision was taken under, kept with its selection/);
    assert.match(lines[4]!, new RegExp(`^note       ${older.address} \\(signed by ${BUYER.did}\\): no settings were kept with this selection .*this node’s settings now, which may differ`));
    assert.match(lines[5]!, new RegExp(`^note       ${stewards.address} \\(signed by ${STEWARD.did}\\)`));
    assert.equal(lines.length, 6);

    // `market audit` on export.json: the audited selection's own settings; a note when they are the exporter's now
    const m: ExportManifest = { format: 'c0mpute.export/1', job: j.address, records: [], selections: decisions.map((d) => d.selection), missing: [], audit: now, settings: 'current', auditArgs: [], decisions };
    const set = new RecordSet();
    const a = checkExport('exp', m, set, { settings: then, job: j.address, selection: kept.address });
    assert.deepEqual([a.settingsSource, a.settingsDiffer, a.auditArgs], ['recorded', false, ['--trusted-buyers', TRUSTED.did, '--skew-ms', '45000']]);
    const b = checkExport('exp', m, set, { settings: now, job: j.address, selection: older.address });
    assert.deepEqual([b.settingsSource, b.settingsDiffer], ['current', false]);
    // an export.json from before settings were kept per selection: its one set, the exporter's at the export
    const old = checkExport('exp', { ...m, decisions: undefined, settings: undefined, audit: then, auditArgs: ['--skew-ms', '45000'] }, set, { settings: now, job: j.address, selection: kept.address });
    assert.deepEqual([old.settingsSource, old.settingsDiffer], ['current', true]);

    // the kept settings go with their selection when the job history drops it
    const s2 = await RecordStore.open(db, '', { clock: () => NOW + 40 * DAY, self: BUYER.did });
    assert.ok((await s2.pruneHistory(NOW + 31 * DAY)).removed >= 2);
    assert.equal(await s2.has(kept.address), false);
    assert.equal(await s2.decisionOf(kept.address), undefined, 'dropped with the selection');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('kept settings that do not read as settings are not trusted: the export falls back to the settings of now, and says so', () => {
  assert.equal(decodeAuditSettings(new TextEncoder().encode('{"trustedBuyers":["not a did"],"dealtWith":false,"secondHandWeight":0.5,"skewMs":1}')), undefined);
  assert.equal(decodeAuditSettings(Uint8Array.of(0xff, 0xfe)), undefined);
  assert.deepEqual(decodeAuditSettings(encodeAuditSettings({ ...then, trustedBuyers: [TRUSTED.did, PROV.did], stewards: [STEWARD.did] })), { ...then, trustedBuyers: [TRUSTED.did, PROV.did].sort(), stewards: [STEWARD.did] });
});
