/**
 * `c0mpute devnet`'s flags (src/cli/commands/devnet-flags.ts): a scenario ran with `--providers 9 --policy nope
 * --jobs 0` and ignored all three, invalid values included (QA qaDev F6). Now an invalid value is refused whether or
 * not a scenario is given, and a walk option given with a scenario is refused naming the option and the scenario.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { C0Error } from '../../../src/errors.js';
import { UsageError } from '../../../src/cli/context.js';
import { checkDevnetFlags } from '../../../src/cli/commands/devnet-flags.js';
import type { DevnetOpts } from '../../../src/cli/commands/devnet-actions.js';

const DEFAULTS: DevnetOpts = { providers: '4', policy: 'balanced', jobs: '2' };

function refusal(o: Partial<DevnetOpts>, given: string[] = []): C0Error | undefined {
  try {
    checkDevnetFlags({ ...DEFAULTS, ...o }, new Set(given));
    return undefined;
  } catch (e) {
    assert.ok(e instanceof UsageError, `a usage error (exit 2): ${String(e)}`);
    return e;
  }
}

test('a scenario with a walk option given: DEVNET_BAD_OPTION naming the option and the scenario', () => {
  for (const scenario of ['overlay', 'orders', 'pool', 'training'] as const) {
    for (const [flag, value] of [['providers', '5'], ['policy', 'cheapest'], ['jobs', '3']] as const) {
      const e = refusal({ [scenario]: true, [flag]: value }, [flag]);
      assert.equal(e?.code, 'DEVNET_BAD_OPTION', `--${scenario} --${flag}`);
      assert.match(e.message, new RegExp(`^--${flag} does not apply to --${scenario}: `));
      assert.equal(e.field, flag);
    }
  }
});

test('invalid values are refused with or without a scenario', () => {
  for (const scenario of [{}, { orders: true }]) {
    assert.equal(refusal({ ...scenario, jobs: '0' }, ['jobs'])?.code, 'DEVNET_BAD_OPTION');
    assert.equal(refusal({ ...scenario, providers: '9x' }, ['providers'])?.code, 'DEVNET_BAD_OPTION');
    assert.equal(refusal({ ...scenario, policy: 'nope' }, ['policy'])?.code, 'POLICY_UNKNOWN');
  }
});

test('the defaults, and the walk options without a scenario, are taken', () => {
  assert.equal(refusal({}), undefined);
  assert.equal(refusal({ orders: true }), undefined, 'the defaults are not "given"');
  assert.equal(refusal({ providers: '6', policy: 'cheapest', jobs: '3', keep: true }, ['providers', 'policy', 'jobs']), undefined);
});
