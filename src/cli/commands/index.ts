/**
 * Every command group registers itself here. A group is a module exporting
 * `register(program: Command): void`; each group owns its own file.
 */
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
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

/**
 * Options every action receives from the root command. A data directory that is a link to nothing (a volume not
 * mounted yet) is DATA_DIR_MISSING (exit 3), naming where it points: before (review s41 rvE) each command went on and
 * said what it then missed, `KEY_MISSING … run c0mpute keys init` (which failed too).
 */
export function globals(cmd: Command): { dataDir: string } {
  const g = cmd.optsWithGlobals<{ dataDir: string }>();
  danglingDataDir(g.dataDir);
  return g;
}

function danglingDataDir(dataDir: string): void {
  let target: string;
  try {
    if (!lstatSync(dataDir).isSymbolicLink()) return;
    target = readlinkSync(dataDir);
  } catch {
    return; // no entry (a data directory not made yet), or one the command says it cannot read
  }
  if (existsSync(dataDir)) return;
  throw new C0Error('DATA_DIR_MISSING', `the data directory ${dataDir} is a link to ${target}, which does not exist (a volume not mounted yet?): mount it, or point --data-dir at the node's data directory`, { field: 'dataDir' });
}
