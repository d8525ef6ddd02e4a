/**
 * `c0mpute help <name>` for a name no command has is USAGE_UNKNOWN_COMMAND, exit 2, as `c0mpute <name>` is (commander's
 * own help command printed the root help and exited 0); a known name is its help, exit 0, and a path of names
 * (`help market export`) is that subcommand's. Runs the real CLI; none of these starts a node.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));

async function c0(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = await runNode([bin, ...args], { timeout: 60_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe('c0mpute help', () => {
  it('an unknown name exits 2 USAGE_UNKNOWN_COMMAND, like the command itself', async () => {
    const cases = [['help', 'nosuch'], ['nosuch'], ['help', 'market', 'nosuch'], ['market', 'help', 'nosuch'], ['--data-dir', '/nonexistent', 'help', 'nosuch']];
    const runs = await Promise.all(cases.map((args) => c0(...args))); // independent: side by side
    for (const [i, args] of cases.entries()) {
      const r = runs[i]!;
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^error USAGE_UNKNOWN_COMMAND: .*'nosuch'/, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
  });

  it('a known name, or a path of names, is its help, exit 0', async () => {
    const cases = [
      [['help'], 'Usage: c0mpute [options] [command]'],
      [['help', 'run'], 'Usage: c0mpute run [options] <job>'],
      [['help', 'market', 'export'], 'Usage: c0mpute market export [options]'],
      [['market', 'help', 'export'], 'Usage: c0mpute market export [options]'],
    ] as const;
    const runs = await Promise.all(cases.map(([args]) => c0(...args))); // independent: side by side
    for (const [i, [args, usage]] of cases.entries()) {
      const r = runs[i]!;
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.ok(r.stdout.startsWith(usage), `${args.join(' ')}: ${r.stdout.slice(0, 80)}`);
    }
  });
});
