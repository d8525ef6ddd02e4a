/**
 * Every command group registers itself here. A group is a module exporting
 * `register(program: Command): void`; each group owns its own file.
 */
import type { Command } from 'commander';
import { register as keys } from './keys.js';
import { register as record } from './record.js';

export function registerCommands(program: Command): void {
  keys(program);
  record(program);
}

/** Options every action receives from the root command. */
export function globals(cmd: Command): { dataDir: string } {
  return cmd.optsWithGlobals<{ dataDir: string }>();
}
