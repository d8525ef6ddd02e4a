/**
 * Times on the console (ui/format.ts). QA (session 49): the Record page showed startedAt/completedAt as raw epoch
 * milliseconds, and a job's deadline was a time of day alone.
 */
import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { dateTime, endedSummary, energyUj, errorText, isTimeField, tookText, whenText } from '../../../ui/format.js';

describe('console times', () => {
  it('a date and a time, ISO-like', () => {
    const t = new Date(2026, 11, 7, 1, 53, 2).getTime();
    assert.equal(dateTime(t), '2026-12-07 01:53:02');
    assert.equal(whenText(t, t + 15_000), '2026-12-07 01:53:02 (15 s ago)');
    assert.equal(whenText(t, t - 60_000), '2026-12-07 01:53:02 (in 60 s)');
  });
  it("a record's time fields are told from its other numbers", () => {
    const t = 1_796_000_000_000;
    for (const k of ['startedAt', 'completedAt', 'announcedAt', 'decidedAt', 'deadline']) assert.ok(isTimeField(k, t), k);
    assert.ok(!isTimeField('startedAt', 390), 'a duration is no date');
    assert.ok(!isTimeField('uj', t), 'energy is no date');
    assert.ok(!isTimeField('deadline', '1796000000000'));
  });
});

test('the Run form’s energy estimate is a number of joules, or FORM_ENERGY_INVALID naming the field', () => {
  assert.equal(energyUj('1000'), 1_000_000_000);
  assert.equal(energyUj(' 2.5 '), 2_500_000);
  // "abc" went to the daemon as null: "energy.uj: Invalid input: expected number, received null"
  for (const bad of ['abc', '-1', '1e3', '1,5', '99999999999']) {
    assert.throws(
      () => energyUj(bad),
      (e: Error & { code?: string }) => e.code === 'FORM_ENERGY_INVALID' && e.message.startsWith('Energy estimate: expected a number of joules') && e.message.includes(`"${bad}"`),
      bad,
    );
  }
});

test('a receipt signed at the restart after a crash does not claim its downtime as run time (QA qaCon F6)', () => {
  assert.equal(tookText({ startedAt: 0, completedAt: 8_000 }), '8.0 s');
  assert.equal(tookText({ startedAt: 0, completedAt: 79_000, failure: 'EXEC_PROVIDER_CRASHED' }), 'crashed; signed at restart, 79 s after it started');
});

test("an ended job's summary shows its time in the console's one format, not ISO (QA qaCon F8)", () => {
  const at = new Date(2026, 11, 7, 10, 29, 13, 127).getTime();
  const said = `This job has ended: its deadline passed at ${new Date(at).toISOString()} with no provider selected.`;
  assert.equal(endedSummary(said, { at }, at + 4 * 60_000), 'This job has ended: its deadline passed at 2026-12-07 10:29:13 (4 min ago) with no provider selected.');
  assert.equal(endedSummary('no end', undefined), 'no end');
});

test("an error's message keeps its line breaks, as the CLI prints it; other controls are escaped (QA ffConsole F5)", () => {
  const yaml = 'the job is not valid YAML: Flow sequence … at line 2, column 1:\n\nworkload: [\n\n^\n';
  assert.equal(errorText(yaml), yaml);
  assert.equal(errorText('a\u202edeifirev\rb'), 'a\\u202edeifirev\\u000db');
});
