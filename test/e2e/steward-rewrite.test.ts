/**
 * A steward that rewrites its ledger is caught (pool/1 §6.7–§6.8), with real
 * `c0mpute start` processes on a private overlay: a steward, a witness, a
 * provider and a buyer run two claims (four entries) and the witness cosigns
 * length 4. The steward is stopped and its ledger rewritten on disk: the
 * release of the first claim now charges 1 µJ, and that entry and every one
 * after it are re-signed with the steward's own key, so the chain verifies on
 * its own. The steward restarts on the rewritten ledger and appends again; the
 * witness, fetching from the head it cosigned, finds two steward-signed entries
 * at one seq: it refuses (WITNESS_EQUIVOCATION), keeps the evidence and
 * publishes a pool-evidence/1 record (received here by an in-process member of
 * the overlay). `c0mpute ledger verify` on the rewritten ledger exits 1: the
 * witness receipt verifies but covers a different head, and nothing past the
 * untouched prefix counts as witnessed.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { eventOf, readLedgerDir, sealEntries, verifyEquivocation, writeLedgerDir, POOL_TYPE, type LedgerEntry } from '../../src/ledger/index.js';
import type { EquivocationEvidence } from '../../src/ledger/evidence.js';
import { open, type Opened } from '../../src/records/envelope.js';
import { loadIdentity } from '../../src/node/identity.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import type { PoolEvent } from '../../src/pool/usage.js';
import { startNode } from './net-helpers.js';
import { bootstrapAddr, waitFor, withLogs } from './node-helpers.js';
import { OVERLAY, claimSpec, ledgerCli, runClaim, startOrg, stewardStatus, waitWitnessed, witnessStatus, type Org, type ReceiptStatusView } from './steward-helpers.js';

let org: Org;

before(async () => {
  org = await startOrg('steward-rewrite', { providers: 1, buyers: ['alpha'], baseMs: 1000 });
});

after(async () => {
  await org?.c.destroy();
});

test('a steward that rewrites its ledger and re-signs it is caught by the witness, and ledger verify reports the receipt covering another head', async () => {
  await withLogs(org.c, async () => {
    const alpha = org.buyers.alpha!;
    const stewardDid = org.steward.did;

    // Two claims, four entries, cosigned to length 4.
    const j1 = await runClaim(alpha, claimSpec('J1', 'team-a', 100_000_000, 100_000));
    const j2 = await runClaim(alpha, claimSpec('J2', 'team-a', 100_000_000, 100_000));
    for (const j of [j1, j2]) assert.equal(j.result.status, 'completed');
    const honest = await waitWitnessed(org.steward, 4);
    assert.equal(honest.ledger.length, 4);
    await waitFor('the witness to hold length 4', async () => (await witnessStatus(org.witness)).stewards[stewardDid]?.held.length === 4, 30_000);
    const held = (await witnessStatus(org.witness)).stewards[stewardDid]!.held;
    assert.deepEqual(held, honest.ledger);

    // A member of the overlay (in process) listening for equivocation evidence.
    const evidence: Array<Opened<EquivocationEvidence>> = [];
    const observer = await startNode({ swarmKey: new Uint8Array(readFileSync(org.keyFile)), overlay: OVERLAY, syncOnConnect: [] });
    org.c.onDestroy(() => observer.stop());
    observer.subscribe('pool-evidence', (rec) => void evidence.push(rec as Opened<EquivocationEvidence>));
    await observer.dial(bootstrapAddr(org.witness));
    const witnessPeer = peerIdFromDid(org.witness.did).toString();
    await waitFor('the witness on the evidence topic', () => observer.topicPeers('pool-evidence').includes(witnessPeer), 30_000);

    // Rewrite: stop the steward; J1's release now charges 1 µJ; re-seal it and everything after with the steward's key.
    await org.c.stop(org.steward);
    const raw = await readLedgerDir(org.ledgerDir);
    assert.equal(raw.entries.length, 4);
    const opened = raw.entries.map((b) => open(b, POOL_TYPE));
    const events: PoolEvent[] = opened.map((o) => eventOf(o.record as LedgerEntry));
    const rel = events[1]!;
    assert.equal(rel.event, 'Released');
    assert.equal(rel.claim, j1.job);
    assert.ok(rel.event === 'Released' && rel.actual.uj > 1);
    events[1] = { event: 'Released', claim: j1.job, actual: { uj: 1, grade: 'Estimator' } };
    const identity = loadIdentity(org.steward.dir);
    assert.equal(identity.did, stewardDid);
    const resealed = sealEntries(events.slice(1), identity.signer, { start: { length: 1, head: opened[0]!.address }, at: Date.now() });
    rmSync(org.ledgerDir, { recursive: true, force: true });
    // The receipts the steward had kept stay beside the rewritten entries.
    await writeLedgerDir(org.ledgerDir, { entries: [raw.entries[0]!, ...resealed.map((e) => e.bytes)], receipts: raw.receipts });
    const rewrittenHead = resealed[2]!.address;
    assert.notEqual(rewrittenHead, held.head);

    // The steward starts on the rewritten ledger (it verifies on its own) and believes it.
    await org.restartSteward();
    const s0 = await stewardStatus(org.steward);
    assert.deepEqual(s0.ledger, { length: 4, head: rewrittenHead });
    assert.equal(s0.teams.find((t) => t.id === 'team-a')!.spent_uj, 1 + j2.energy!.uj);

    // It appends again and publishes its head: the witness refuses and publishes the evidence.
    const j3 = await runClaim(alpha, claimSpec('J3', 'team-a', 100_000_000, 100_000));
    assert.equal(j3.result.status, 'completed');
    const ws = await waitFor('the witness to refuse the rewritten head', async () => {
      const w = (await witnessStatus(org.witness)).stewards[stewardDid];
      return w?.last?.refused ? w : undefined;
    }, 30_000);
    assert.equal(ws.last?.refused, 'WITNESS_EQUIVOCATION');
    assert.deepEqual(ws.held, held, 'the witness still holds the head it cosigned');
    assert.ok(ws.evidence >= 1);
    const ev = await waitFor('a pool-evidence/1 record', () => evidence[0], 30_000);
    assert.equal(ev.type, 'pool-evidence/1');
    assert.equal(ev.signer, org.witness.did);
    assert.equal(ev.record.steward, stewardDid);
    assert.equal(ev.record.seq, 3);
    assert.deepEqual(Buffer.from(ev.record.held), Buffer.from(raw.entries[3]!));
    assert.deepEqual(Buffer.from(ev.record.conflicting), Buffer.from(resealed[2]!.bytes));
    // Anyone can check it from the two entries alone.
    assert.deepEqual(verifyEquivocation(ev.record.held, ev.record.conflicting), { steward: stewardDid, seq: 3, addresses: [held.head, rewrittenHead] });

    // No receipt covers the rewritten history: only the untouched entry 0 can count as witnessed.
    const checkReceipts = (receipts: ReceiptStatusView[]) => {
      assert.ok(receipts.length >= 1);
      for (const r of receipts) {
        if (r.status === 'valid') assert.ok(r.length! <= 1, `a valid receipt at length ${r.length}`);
        else {
          assert.equal(r.status, 'mismatch');
          assert.equal(r.code, 'WITNESS_HEAD_MISMATCH');
          assert.equal(r.witness, org.witness.did);
        }
      }
      const at4 = receipts.find((r) => r.length === 4);
      assert.ok(at4, 'the receipt for the cosigned length 4 is kept');
      assert.equal(at4.status, 'mismatch');
      assert.equal(at4.head, held.head);
      assert.equal(at4.ours, rewrittenHead);
    };
    const s1 = await waitFor('the steward’s J3 release', async () => {
      const s = await stewardStatus(org.steward);
      return s.ledger.length === 6 ? s : undefined;
    }, 30_000);
    assert.ok(s1.attestation.witnessedLength <= 1);
    checkReceipts(s1.attestation.receipts);

    // `c0mpute ledger verify` (a real process) on the stopped steward's directory.
    await org.c.stop(org.steward);
    const v = await ledgerCli(org.c, 'verify', org.ledgerDir);
    assert.equal(v.r.code, 1);
    assert.equal(v.json.ok, false);
    assert.equal(v.json.length, 6, 'the chain itself verifies: only the witness shows the rewrite');
    assert.equal((v.json.problem as { code: string }).code, 'WITNESS_HEAD_MISMATCH');
    const att = v.json.attestation as { grade: string; witnessedLength: number; receipts: ReceiptStatusView[] };
    assert.ok(att.witnessedLength <= 1);
    checkReceipts(att.receipts);

    // Restarted, it still says so at once: the evidence is read back from the node's store (the witness gossips it
    // again only at its own start and every hour; a records sync with a member it dials may bring it back later).
    // Started dialling nobody, as a steward its members dial is (QA qaUp F2: its status showed no evidence at all).
    const cfg = org.steward.config as { network: Record<string, unknown> };
    org.steward = await org.c.start('steward', { ...cfg, network: { ...cfg.network, bootstrap: [] } });
    const s2 = await stewardStatus(org.steward);
    assert.equal(s2.evidence?.pairs, 1, 'the evidence pair is shown after a restart');
    assert.deepEqual(s2.evidence?.seqs, [3]);

    // "A new accounting window" begun under the same key (the ledger moved aside, ledger.created removed) would be a
    // second chain at seqs the witness cosigned: the start is refused, nothing created (QA qaUp F1).
    await org.c.stop(org.steward);
    renameSync(org.ledgerDir, `${org.ledgerDir}.period1`);
    rmSync(join(org.ledgerDir, '..', 'ledger.created'));
    await assert.rejects(org.c.start('steward', org.steward.config), /steward exited \(3\)[\s\S]*STEWARD_KEY_HAS_LEDGER/);
    assert.equal(existsSync(org.ledgerDir), false, 'no new ledger directory');
  });
});
