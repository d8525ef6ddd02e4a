/**
 * `c0mpute jobs` prints each job's whole address, which `c0mpute offers <job>` and `market export --job` take (their
 * help: "as `c0mpute jobs` lists it"); it printed `sha256:00fb1ae3…`, which both refuse ADDRESS_MALFORMED.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jobsHeadLine } from '../../../src/cli/commands/node.js';
import { isAddress } from '../../../src/records/address.js';
import { buildProgram } from '../../../src/cli/program.js';

describe('c0mpute jobs: the job line', () => {
  const address = 'sha256:' + '0f'.repeat(32);
  it('carries the whole address, as offers and market export take it', () => {
    const line = jobsHeadLine({ address, record: { workload: 'builtin.sha256', announcedAt: Date.UTC(2026, 0, 2) } });
    assert.equal(line, `2026-01-02T00:00:00.000Z  ${address}  builtin.sha256`);
    const printed = line.split(/\s+/)[1]!;
    assert.ok(isAddress(printed), printed);
  });

  it('the help of offers and market export says so', () => {
    const p = buildProgram();
    const offers = p.commands.find((c) => c.name() === 'offers')!;
    assert.match(offers.registeredArguments[0]!.description, /as `c0mpute jobs` lists it/);
    const exp = p.commands.find((c) => c.name() === 'market')!.commands.find((c) => c.name() === 'export')!;
    assert.match(exp.options.find((o) => o.long === '--job')!.description, /as `c0mpute jobs` lists it/);
  });
});
