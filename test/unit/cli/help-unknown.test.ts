/**
 * `c0mpute help <name>` for a name no command has is USAGE_UNKNOWN_COMMAND, exit 2, as `c0mpute <name>` is (commander's
 * own help command printed the root help and exited 0); a known name is its help, exit 0, and a path of names
 * (`help market export`) is that subcommand's. Runs the real CLI; none of these starts a node.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../../src/cli/main.js', import.meta.url));

function c0(...args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe('c0mpute help', () => {
  it('an unknown name exits 2 USAGE_UNKNOWN_COMMAND, like the command itself', () => {
    for (const args of [['help', 'nosuch'], ['nosuch'], ['help', 'market', 'nosuch'], ['market', 'help', 'nosuch'], ['--data-dir', '/nonexistent', 'help', 'nosuch']]) {
      const r = c0(...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^error USAGE_UNKNOWN_COMMAND: .*'nosuch'/, args.join(' '));
      assert.equal(r.stdout, '', args.join(' '));
    }
  });

  it('a known name, or a path of names, is its help, exit 0', () => {
    for (const [args, usage] of [
      [['help'], 'Usage: c0mpute [options] [command]'],
      [['help', 'run'], 'Usage: c0mpute run [options] <job>'],
      [['help', 'market', 'export'], 'Usage: c0mpute market export [options]'],
      [['market', 'help', 'export'], 'Usage: c0mpute market export [options]'],
    ] as const) {
      const r = c0(...args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.ok(r.stdout.startsWith(usage), `${args.join(' ')}: ${r.stdout.slice(0, 80)}`);
    }
  });
});
