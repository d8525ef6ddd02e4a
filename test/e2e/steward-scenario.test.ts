/**
 * The organisation scenario, end to end with real `c0mpute start` processes on
 * a private overlay (pool/1 admission inside the walk): a steward holding a
 * tree of two teams (team-a 600 J / 1 device, team-b 300 J / 1 device), a
 * witness, two providers and two buyers (alpha for team-a, beta for team-b).
 *
 * - A claim past its team's guarantee on an unmeasured estimate is denied with
 *   its reason before the job is announced, and nothing is recorded.
 * - Claims within the guarantee are admitted with their reservation and grade;
 *   a second team-a claim sent while the first holds the team's only device is
 *   queued (DEVICES_HELD) and runs once the first releases; a third, whose
 *   deadline ends first, expires queued.
 * - Each release charges the sum of the job's receipts' energy, at the worst
 *   grade (read back with `c0mpute ledger show` after the steward stops).
 * - The ledger is witnessed to its current length; the steward restarted on
 *   the same data dir reports exactly the usage it had (rebuilt from its ledger).
 * - Every member names the witness (`network.witnesses`): a receipt another key
 *   of the overlay signs, claiming the steward had another head, is ignored by
 *   every member, and a ledger a buyer fetches (`c0mpute ledger fetch`) still
 *   verifies, witnessed by the named witness alone.
 *
 * The tests share one overlay and run in order. A1 is an exec workload
 * (test.hold) that runs until the test creates its release file, once A2 is
 * seen queued behind it (it was 2,000,000 rounds of builtin.sha256, a few
 * seconds that had to outlast the queueing on a loaded machine).
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { bootstrapAddr, c0mpute, metricSum, metricsText, waitFor, withLogs } from './node-helpers.js';
import { startNode } from './net-helpers.js';
import { seal } from '../../src/records/envelope.js';
import { WITNESS_TYPE, type WitnessReceipt } from '../../src/ledger/entry.js';
import { OVERLAY, claimSpec, ledgerCli, runClaim, showLedger, startOrg, stewardStatus, waitWitnessed, witnessStatus, type ClaimRun, type LedgerRow, type Org, type StewardView } from './steward-helpers.js';

let org: Org;
const runs: Partial<Record<'A1' | 'A2' | 'B1' | 'B2', ClaimRun>> = {};
/** The runs of the earlier tests (they run in order). */
const done = () => {
  const { A1, A2, B1, B2 } = runs;
  assert.ok(A1 && A2 && B1 && B2, 'the earlier tests ran');
  return { A1, A2, B1, B2 };
};
let before1: StewardView;
/** test.hold's job ends (echoing its input) once this file exists. */
const holdDir = mkdtempSync(join(tmpdir(), 'c0-hold-'));
const releaseFile = join(holdDir, 'release');
const hold = { executor: { type: 'exec', command: ['sh', '-c', 'while [ ! -e "$RELEASE" ]; do sleep 0.05; done; cat'], env: { RELEASE: releaseFile } }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 200 } };

before(async () => {
  org = await startOrg('steward-scenario', {
    providers: 2,
    buyers: ['alpha', 'beta'],
    namedWitness: true,
    provider: (cfg) => {
      const p = cfg.provider as { workloads: Record<string, unknown> };
      return { ...cfg, provider: { ...p, workloads: { ...p.workloads, 'test.hold': hold } } };
    },
  });
});

after(async () => {
  writeFileSync(releaseFile, ''); // a failed run leaves no shell looping behind
  await org?.c.destroy();
  rmSync(holdDir, { recursive: true, force: true });
});

const team = (s: StewardView, id: string) => s.teams.find((t) => t.id === id)!;

test('a claim past its guarantee on an unmeasured estimate is denied with its reason, never announced, and nothing is recorded', async () => {
  await withLogs(org.c, async () => {
    const s0 = await stewardStatus(org.steward);
    assert.equal(s0.ledger.length, 0);
    // team-b holds 300 J; 5000 J on an Estimator figure could only ever run on surplus, which a guess may not draw on (§4.4).
    const b1 = await runClaim(org.buyers.beta!, claimSpec('B1', 'team-b', 5_000_000_000, 100_000));
    runs.B1 = b1;
    assert.equal(b1.result.status, 'denied');
    assert.equal(b1.admission?.verdict, 'Deny');
    assert.equal(b1.admission?.reason, 'UNOBSERVED_EXCEEDS_GUARANTEE');
    assert.ok(b1.admission?.reasons?.includes('UNOBSERVED_EXCEEDS_GUARANTEE'));
    assert.equal(b1.queued.length, 0, 'a claim that can never fit is not reported as pending (§4.5)');
    assert.equal(b1.events.some((e) => e.e === 'job' || e.e === 'offer'), false, 'a denied job is never announced');
    const s1 = await stewardStatus(org.steward);
    assert.deepEqual(s1.ledger, s0.ledger, 'a Deny is not a ledger event');
    assert.deepEqual(s1.teams, s0.teams);
    assert.deepEqual(s1.queued, []);
  });
});

test('admissions carry the reservation and its grade; a claim queued on a held device runs once capacity frees', async () => {
  await withLogs(org.c, async () => {
    const alpha = org.buyers.alpha!;
    const beta = org.buyers.beta!;
    // A1 holds team-a's only device until released below; B2 runs beside it on team-b's own device.
    const a1 = runClaim(alpha, { ...claimSpec('A1', 'team-a', 100_000_000, 1, 'Estimator', 120_000), workload: 'test.hold' });
    const b2 = runClaim(beta, claimSpec('B2', 'team-b', 50_000_000, 200_000, 'ModelBased'));
    await waitFor('A1 to hold team-a’s device', async () => team(await stewardStatus(org.steward), 'team-a').held_devices === 1, 45_000);
    const a2 = runClaim(alpha, claimSpec('A2', 'team-a', 80_000_000, 200_000));
    // While A1 runs, the steward lists A2 as queued, with its reason.
    const queued = await waitFor('A2 queued at the steward', async () => (await stewardStatus(org.steward)).queued.find((q) => q.entitlement === 'team-a'), 45_000);
    assert.equal(queued.reason, 'DEVICES_HELD');
    // A3 queues behind A2 with a deadline that ends before A1 is released: it expires queued, never announced.
    const a3 = await runClaim(alpha, claimSpec('A3', 'team-a', 10_000_000, 1, 'Estimator', 4_000));
    assert.equal(a3.result.status, 'queue-expired');
    assert.equal(a3.admission?.verdict, 'Expired');
    assert.deepEqual(
      a3.queued.map((q) => q.reason),
      ['DEVICES_HELD'],
    );
    assert.equal(a3.events.some((e) => e.e === 'job'), false, 'a claim that never left the queue is never announced');
    assert.deepEqual(
      (await stewardStatus(org.steward)).queued.map((q) => q.claim),
      [queued.claim],
      'the expired claim left the line; A2 keeps its place',
    );
    writeFileSync(releaseFile, '');
    [runs.A1, runs.B2, runs.A2] = await Promise.all([a1, b2, a2]);
    const { A1, A2, B2 } = done();

    for (const r of [A1, A2, B2]) {
      assert.equal(r.result.status, 'completed');
      assert.equal(r.admission?.verdict, 'Admit');
      assert.equal(r.admission?.borrowed_uj, 0, 'within the guarantee nothing is borrowed');
      assert.ok(r.energy && r.energy.uj > 0, 'the buyer holds a receipt with an energy figure');
    }
    assert.deepEqual(A1.admission?.reserved, { uj: 100_000_000, grade: 'Estimator' });
    assert.deepEqual(B2.admission?.reserved, { uj: 50_000_000, grade: 'ModelBased' });
    assert.deepEqual(A2.admission?.reserved, { uj: 80_000_000, grade: 'Estimator' });
    assert.equal(A1.queued.length, 0);
    assert.equal(B2.queued.length, 0);
    assert.deepEqual(
      A2.queued.map((q) => q.reason),
      ['DEVICES_HELD'],
      'A2 was told why it waits, once',
    );
    assert.equal(queued.claim, A2.job);

    // Three admissions and three releases, witnessed to the current length.
    const s = await waitWitnessed(org.steward, 6);
    assert.equal(s.ledger.length, 6);
    assert.deepEqual(
      s.attestation.witnesses.map((w) => w.witness),
      [org.witness.did],
    );
    assert.equal(s.attestation.witnessedLength, 6);
    const w = await witnessStatus(org.witness);
    assert.deepEqual(w.stewards[org.steward.did]?.held, s.ledger);
    assert.deepEqual(s.queued, []);
    // Usage: nothing reserved or held any more; each team spent what its receipts say.
    const a = team(s, 'team-a');
    const b = team(s, 'team-b');
    assert.deepEqual([a.reserved_uj, a.held_devices, a.open_claims, b.reserved_uj, b.held_devices, b.open_claims], [0, 0, 0, 0, 0, 0]);
    assert.equal(a.spent_uj, A1.energy!.uj + A2.energy!.uj);
    assert.equal(b.spent_uj, B2.energy!.uj);
    before1 = s;
  });
});

test('the ledger on disk: each release charges the sum of its receipts’ energy; the steward restarted reports the same usage, rebuilt from it', async () => {
  await withLogs(org.c, async () => {
    const { A1, A2, B1, B2 } = done();
    await org.c.stop(org.steward);

    const rows = await showLedger(org.c, org.ledgerDir);
    assert.deepEqual(
      rows.map((r) => r.seq),
      [0, 1, 2, 3, 4, 5],
    );
    const at = (event: string, claim: string): LedgerRow => {
      const found = rows.filter((r) => r.entry.event === event && r.entry.claim === claim);
      assert.equal(found.length, 1, `one ${event} entry for ${claim}`);
      return found[0]!;
    };
    assert.equal(
      rows.some((r) => r.entry.claim === B1.job),
      false,
      'the denied claim left no trace in the ledger',
    );
    for (const [r, ent, devices] of [[A1, 'team-a', 1], [A2, 'team-a', 1], [B2, 'team-b', 1]] as const) {
      const adm = at('Admitted', r.job);
      const rel = at('Released', r.job);
      assert.equal(adm.address, r.admission?.entry, 'the buyer was told the Admitted entry’s address');
      assert.equal(adm.entry.entitlement, ent);
      assert.equal(adm.entry.class, 'sha256-batch');
      assert.equal(adm.entry.devices, devices);
      assert.deepEqual(adm.entry.reserved, r.admission?.reserved);
      assert.equal(adm.entry.borrowed_uj, 0);
      assert.ok(rel.seq > adm.seq);
      // §6.2: the actual figure replaces the reservation — the receipts' energy, at their worst grade.
      assert.deepEqual(rel.entry.actual, r.energy);
    }
    // A2 was admitted only after A1 released team-a's device.
    assert.ok(at('Admitted', A2.job).seq > at('Released', A1.job).seq);

    // `ledger verify` on the stopped steward's directory: the chain verifies and is witnessed to its length.
    const v = await ledgerCli(org.c, 'verify', org.ledgerDir);
    assert.equal(v.r.code, 0, v.r.err);
    assert.equal(v.json.ok, true);
    assert.equal(v.json.length, 6);
    assert.equal(v.json.head, before1.ledger.head);
    const att = v.json.attestation as StewardView['attestation'];
    assert.equal(att.grade, 'witnessed');
    assert.equal(att.witnessedLength, 6);
    assert.deepEqual(
      att.witnesses.map((x) => x.witness),
      [org.witness.did],
    );

    // Restart on the same data dir: the usage is rebuilt from the ledger, identical.
    const steward = await org.restartSteward();
    const after1 = await stewardStatus(steward);
    assert.deepEqual(after1.ledger, before1.ledger);
    assert.deepEqual(after1.teams, before1.teams);
    assert.deepEqual(after1.queued, []);
    assert.equal(after1.attestation.grade, 'witnessed');
    assert.equal(after1.attestation.witnessedLength, after1.ledger.length);
  });
});

test('the restarted steward admits against the usage it rebuilt, and the witness goes on cosigning the extended ledger', async () => {
  await withLogs(org.c, async () => {
    const s0 = await stewardStatus(org.steward);
    const b = team(s0, 'team-b');
    assert.ok(b.spent_uj > 0);
    // Fits an untouched 300 J budget, not what is left of it: what team-b's released claims spent never comes back
    // within the ledger, so a guess past it could only ever borrow, which it may not (§4.4): denied, never queued (§4.5).
    const left = b.guarantee_uj - b.spent_uj;
    const b3 = await runClaim(org.buyers.beta!, claimSpec('B3', 'team-b', left + 1, 100_000, 'Estimator', 4_000));
    assert.equal(b3.result.status, 'denied');
    assert.equal(b3.admission?.verdict, 'Deny');
    assert.deepEqual(b3.admission?.reasons, ['UNOBSERVED_EXCEEDS_GUARANTEE']);
    assert.equal(b3.queued.length, 0, 'the impossible is not reported as pending');
    assert.equal(b3.events.some((e) => e.e === 'job'), false, 'a denied claim is never announced');
    const s1 = await stewardStatus(org.steward);
    assert.deepEqual(s1.ledger, s0.ledger, 'a Deny is not a ledger event');
    assert.deepEqual(s1.teams, s0.teams);
    assert.deepEqual(s1.queued, []);

    // What is left is still there to spend; the witness cosigns the extension of what it cosigned before the restart.
    const b4 = await runClaim(org.buyers.beta!, claimSpec('B4', 'team-b', left, 100_000));
    assert.equal(b4.result.status, 'completed');
    assert.deepEqual(b4.admission?.reserved, { uj: left, grade: 'Estimator' });
    const s2 = await waitWitnessed(org.steward, 8);
    assert.equal(s2.ledger.length, 8);
    assert.equal(s2.attestation.witnessedLength, 8);
    assert.equal(team(s2, 'team-b').spent_uj, b.spent_uj + b4.energy!.uj);
    const w = await witnessStatus(org.witness);
    assert.deepEqual(w.stewards[org.steward.did]?.held, s2.ledger);
    assert.equal(w.stewards[org.steward.did]?.evidence, 0);
    assert.equal(w.stewards[org.steward.did]?.last?.refused, undefined);
  });
});

test('an overlay naming its witness: a receipt signed by another member claiming another head is ignored by every member; a fetched ledger verifies, witnessed by the named witness alone', async () => {
  await withLogs(org.c, async () => {
    const stewardDid = org.steward.did;
    const s0 = await waitWitnessed(org.steward, (await stewardStatus(org.steward)).ledger.length);
    // A member of the overlay (it holds the swarm key) signs a receipt of its own: the steward's ledger at length 2 had another head.
    const rogue = await startNode({ swarmKey: new Uint8Array(readFileSync(org.keyFile)), overlay: OVERLAY, syncOnConnect: [] });
    org.c.onDestroy(() => rogue.stop());
    for (const n of [org.steward, org.buyers.alpha!]) await rogue.dial(bootstrapAddr(n));
    const ignored = async (n: typeof org.steward) => metricSum(await metricsText(n), 'c0mpute_net_records_total', { kind: 'pool-witness', verdict: 'ignore', reason: 'WITNESS_NOT_NAMED' });
    let at = Date.now();
    await waitFor('the steward and a buyer to ignore the unnamed receipts', async () => {
      // one that reads as a rewrite, and one covering the real head (it would pad "witnessed by": only the list stops it)
      const lie = seal(WITNESS_TYPE, { steward: stewardDid, length: 2, head: 'sha256:' + '00'.repeat(32), witnessedAt: at++ } satisfies WitnessReceipt, rogue.signer);
      const pad = seal(WITNESS_TYPE, { steward: stewardDid, length: s0.ledger.length, head: s0.ledger.head, witnessedAt: at++ } satisfies WitnessReceipt, rogue.signer);
      for (const r of [lie, pad]) await rogue.publish('pool-witness', r.bytes).catch(() => undefined);
      return (await ignored(org.steward)) >= 2 && (await ignored(org.buyers.alpha!)) >= 2;
    }, 30_000, 500);
    // The steward's attestation is the named witness's alone.
    const s1 = await stewardStatus(org.steward);
    assert.deepEqual(s1.attestation.witnesses.map((w) => w.witness), [org.witness.did]);
    assert.equal(s1.attestation.witnessedLength, s0.attestation.witnessedLength);
    // Any member can fetch the ledger with the receipts it kept, and it verifies (without --witness too: nothing unnamed was kept).
    const file = join(org.c.root, 'fetched.ledger');
    const f = await c0mpute(org.buyers.alpha!.dir, ['ledger', 'fetch', stewardDid, file, '--overlay', OVERLAY]);
    assert.equal(f.code, 0, f.out + f.err);
    assert.match(f.out, new RegExp(`wrote .*: ${s1.ledger.length} entries, [1-9][0-9]* witness receipt`));
    // two verifications of the fetched file, as two processes at once
    const [{ r, json }, named] = await Promise.all([
      ledgerCli(org.c, 'verify', file),
      c0mpute(org.c.dataDir('auditor').dir, ['ledger', 'verify', file, '--steward', stewardDid, '--witness', org.witness.did]),
    ]);
    assert.equal(r.code, 0, r.out);
    const a = json.attestation as { grade: string; witnesses: Array<{ witness: string; length: number }>; receipts: Array<{ status: string; witness?: string }> };
    assert.equal(a.grade, 'witnessed');
    assert.deepEqual(a.witnesses.map((w) => w.witness), [org.witness.did]);
    assert.ok(a.receipts.every((x) => x.status === 'valid' && x.witness === org.witness.did), JSON.stringify(a.receipts));
    assert.equal(named.code, 0, named.out + named.err);
    assert.match(named.out, new RegExp(`attestation\\s+witnessed by ${org.witness.did} up to length ${s1.attestation.witnessedLength}`));
    // the witness itself fetches it with its own receipt: gossip never brings a node what it published, and the node that
    // countersigned the ledger fetched it as self-attested (QA pass, session 48)
    const own = join(org.c.root, 'fetched-by-witness.ledger');
    const w = await c0mpute(org.witness.dir, ['ledger', 'fetch', stewardDid, own, '--overlay', OVERLAY]);
    assert.equal(w.code, 0, w.out + w.err);
    assert.match(w.out, /entries, [1-9][0-9]* witness receipt/);
    const wv = await c0mpute(org.c.dataDir('auditor').dir, ['ledger', 'verify', own, '--steward', stewardDid, '--witness', org.witness.did]);
    assert.equal(wv.code, 0, wv.out + wv.err);
    assert.match(wv.out, new RegExp(`attestation\\s+witnessed by ${org.witness.did} up to length`));
  });
});
