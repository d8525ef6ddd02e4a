/**
 * What the console says about a ledger's trust (ui/trust.ts), against what the
 * CLI says (review s40 C F1): a steward whose witness holds a longer ledger, or
 * evidence that it signed two histories, was shown "witnessed ✓" in green from
 * its attestation grade alone. Now the warnings override the grade, worded as
 * `c0mpute steward status` words them; a witness's panel says what
 * `c0mpute status` and `c0mpute witness status` say, rolled-back flagged.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { coverageStatus, coverageText, rolledBackWarning, stewardWarnings, witnessStewardLine, witnessSummary, type StewardTrust, type WitnessView } from '../../../ui/trust.js';

const STEWARD = 'did:key:z6MksteWard000000000000000000000000000000000000';
const WITNESS = 'did:key:z6MkwitNess000000000000000000000000000000000000';
const short = (d: string) => d.slice(8, 14);

// GET /v1/steward as the reviewer saw it: attestation "witnessed" to 4 of 6, yet a witness holds length 6 and this ledger has 5
const forked: StewardTrust = {
  steward: STEWARD,
  ledger: { length: 6 },
  attestation: { grade: 'witnessed', witnessedLength: 4 },
  contradictingWitnesses: [{ witness: WITNESS, code: 'WITNESS_LENGTH_BEYOND', length: 6, ours: 5 }],
  evidence: { pairs: 1, witnesses: 1, seqs: [5] },
};

describe('steward trust', () => {
  it('a contradicting witness and evidence are warned about, and override a good grade', () => {
    assert.equal(coverageStatus(forked), 'contradicted');
    assert.equal(coverageStatus({ ...forked, evidence: undefined }), 'contradicted', 'a contradiction alone');
    assert.equal(coverageStatus({ ...forked, contradictingWitnesses: undefined }), 'contradicted', 'evidence alone');
    const w = stewardWarnings(forked, short);
    assert.deepEqual(w, [
      'witness z6Mkwi holds length 6, this ledger has 5 (WITNESS_LENGTH_BEYOND: truncated, or restored from an older copy)',
      `equivocation evidence against this steward: 1 pair from 1 witness (seq 5): anyone holding it can prove this key signed two histories, so its ledger and attestation are not to be trusted (c0mpute witness evidence ${STEWARD} on a witness)`,
    ]);
    const mismatch = stewardWarnings({ ...forked, evidence: undefined, contradictingWitnesses: [{ witness: WITNESS, code: 'WITNESS_HEAD_MISMATCH', length: 3, ours: 6 }] }, short);
    assert.deepEqual(mismatch, ['witness z6Mkwi saw another head at length 3 (WITNESS_HEAD_MISMATCH: this history was rewritten)']);
  });

  it('a ledger nobody contradicts: no warning; complete when wholly cosigned, else what is and is not witnessed, never a good mark', () => {
    // QA qaCon F1: the only witness down, 16 of 80 entries self-attested, read "witnessed to length 64 of 80 ✓ witnessed" in green
    const clean: StewardTrust = { steward: STEWARD, ledger: { length: 80 }, attestation: { grade: 'witnessed', witnessedLength: 64 } };
    assert.deepEqual(stewardWarnings(clean, short), []);
    assert.equal(coverageStatus(clean), 'partly witnessed');
    assert.equal(coverageText(clean), 'witnessed to length 64 of 80 (the last 16 entries are self-attested)');
    assert.equal(coverageText({ ...clean, attestation: { grade: 'witnessed', witnessedLength: 79 } }), 'witnessed to length 79 of 80 (the last entry is self-attested)');
    const whole = { ...clean, attestation: { grade: 'witnessed', witnessedLength: 80 } };
    assert.equal(coverageStatus(whole), 'complete');
    assert.equal(coverageText(whole), 'witnessed to length 80 of 80');
    const none = { ...clean, attestation: { grade: 'self-attested', witnessedLength: 0 } };
    assert.equal(coverageStatus(none), 'self-attested');
    assert.equal(coverageText(none), 'no entry witnessed (the 80 entries are self-attested)');
    assert.equal(coverageStatus({ ...clean, ledger: { length: 0 }, attestation: { grade: 'self-attested', witnessedLength: 0 } }), 'self-attested');
  });
});

describe('witness panel', () => {
  const rolled: WitnessView = {
    witness: WITNESS,
    stewards: {
      [STEWARD]: { held: { length: 6, head: 'sha256:ab' }, evidence: 1, last: { refused: 'WITNESS_LEDGER_ROLLED_BACK', at: 0 }, rolledBack: { held: 6, heard: 5, served: 5, at: Date.UTC(2026, 0, 1) } },
      'did:key:z6Mkother': { held: { length: 2, head: 'sha256:cd' }, evidence: 0, last: { length: 2, at: 0 } },
    },
  };

  it('says what c0mpute status says, flagged when evidence is kept or a ledger went back', () => {
    assert.deepEqual(witnessSummary(rolled), { text: '2 stewards held (longest length 6), ⚠ evidence 1 pair kept, ⚠ 1 steward rolled back [WITNESS_LEDGER_ROLLED_BACK]', warn: true });
    assert.deepEqual(witnessSummary({ witness: WITNESS, stewards: {} }), { text: '0 stewards held, evidence 0', warn: false });
  });

  it('per steward: held, evidence, the last refusal, and the rolled-back warning', () => {
    const s = rolled.stewards[STEWARD]!;
    assert.equal(witnessStewardLine(s, s.last!.at + 4 * 60_000), 'held length 6 head sha256:ab, evidence 1 pair kept, last refused WITNESS_LEDGER_ROLLED_BACK (4 min ago)');
    assert.equal(rolledBackWarning(s), 'WITNESS_LEDGER_ROLLED_BACK: the steward’s ledger is shorter than the length 6 held (heard a head of length 5, it serves 5 entries), 2026-01-01T00:00:00.000Z: restored from an old copy or truncated');
    const o = rolled.stewards['did:key:z6Mkother']!;
    assert.equal(witnessStewardLine(o, o.last!.at + 12_000), 'held length 2 head sha256:cd, evidence 0 pairs kept, last cosigned length 2 (12 s ago)');
    assert.equal(rolledBackWarning(o), undefined);
  });
});
