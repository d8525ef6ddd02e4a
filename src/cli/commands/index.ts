/**
 * Every command group registers itself here. A group is a module exporting
 * `register(program: Command): void`; each group owns its own file.
 */
import type { Command } from 'commander';
import { register as keys } from './keys.js';
import { register as record } from './record.js';
import { register as node, registerLiveMarket } from './node.js';
import { register as devnet } from './devnet.js';
import { register as steward, registerLedgerFetch } from './steward.js';
import { register as ledger } from './ledger.js';
import { register as pool } from './pool.js';
import { register as market } from './market.js';
import { register as overlay } from './overlay.js';
import { register as batch } from './batch.js';
import { register as poolProvider } from './pool-provider.js';
import { register as train } from './train.js';
import { register as consoleCmd } from './console.js';
import { register as witness } from './witness.js';

export function registerCommands(program: Command): void {
  keys(program);
  record(program);
  ledger(program);
  registerLedgerFetch(program);
  pool(program);
  node(program);
  devnet(program);
  steward(program);
  witness(program);
  market(program);
  overlay(program);
  batch(program);
  poolProvider(program);
  train(program);
  consoleCmd(program);
  // Last: attaches `market list` (the default) to the market group, creating it if absent.
  registerLiveMarket(program);
}

/** Options every action receives from the root command. */
export function globals(cmd: Command): { dataDir: string } {
  return cmd.optsWithGlobals<{ dataDir: string }>();
}
