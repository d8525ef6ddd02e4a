/**
 * The witness and steward roles taken off an overlay (docs/node.md "Changing roles"): what they kept stays, and the
 * node says so at start.
 *
 * - **Witness.** The heads it cosigned and the equivocation evidence it kept live in the node's database
 *   (`witness-heads`, `witness-evidence`: src/ledger/witness.ts). With the role off, a `kept` WitnessRole
 *   (src/roles/witness.ts WitnessConfig.mode) reads them: GET /v1/witness (`role: "off"`) and
 *   GET /v1/witness/evidence/:steward answer as before, the evidence is gossiped again as before, and nothing is
 *   fetched, heard or cosigned. One warning names what is held. A display command's node (an offline
 *   `witness evidence`) reads it too, and publishes nothing. Before (QA witness pass, finding 5) the evidence was
 *   refused ROLE_NOT_ENABLED, nothing was said at start, and its gossip stopped: the proof went quiet with the role.
 * - **Steward.** Its ledger (`<data-dir>/steward/<overlay>/ledger`) stays where it is, unserved: nothing admits,
 *   buyers that ask this node get STEWARD_UNREACHABLE, and witnesses asking for it WITNESS_NOT_A_STEWARD. One
 *   warning names the directory, so the ledger is not forgotten (it is the only record of the usage it charged).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Db } from '../store/db.js';
import type { Logger } from '../util/log.js';
import { holdsWitnessState, WitnessRole, type WitnessPorts } from '../roles/witness.js';
import type { StewardIdentity } from '../roles/steward-ports.js';

/**
 * A `kept` witness role when the store holds what a witness kept, else undefined; warns once (not on a display node,
 * which runs no role and says nothing of them).
 */
export async function keptWitness(o: WitnessPorts, db: Db, identity: StewardIdentity, display: boolean): Promise<WitnessRole | undefined> {
  const held = await holdsWitnessState(db, identity.signer);
  if (!held) return undefined;
  if (!display) {
    const pairs = [...held.evidence.values()].reduce((n, c) => n + c, 0);
    o.log.warn(
      { overlay: o.name, headsHeld: held.heads, evidence: Object.fromEntries([...held.evidence].slice(0, 16)), pairs },
      `the witness role is not configured on this overlay, but this node holds what it kept as a witness (heads of ${held.heads} steward${held.heads === 1 ? '' : 's'}, ${pairs} evidence pair${pairs === 1 ? '' : 's'}): nothing is fetched or cosigned; the evidence is still gossiped and handed out (c0mpute witness evidence <steward>, c0mpute witness status)`,
    );
  }
  return WitnessRole.start(o, db, identity, { mode: 'kept', ...(display ? { gossip: 'none' as const } : {}) });
}

/** Warn when this node holds a steward ledger for the overlay but the steward role is off (nothing else is done). */
export function stewardLedgerLeft(o: { name: string; log: Logger }, dataDir: string, namedSteward: string | undefined, did: string): void {
  const dir = join(dataDir, 'steward', o.name, 'ledger');
  if (!existsSync(join(dir, 'CURRENT')) && !existsSync(join(dataDir, 'steward', o.name, 'ledger.created'))) return;
  o.log.warn(
    { overlay: o.name, ledger: dir, networkStewardIsThisNode: namedSteward === did ? 'yes' : 'no' },
    `the steward role is not configured on this overlay, but this node holds a steward ledger at ${dir}: it is not served or appended to; buyers that ask this node to admit a claim get STEWARD_UNREACHABLE and witnesses WITNESS_NOT_A_STEWARD${namedSteward === did ? ' (network.steward still names this node)' : ''}. Keep the directory: it is the only record of the usage it charged, and the witnesses hold its head (c0mpute ledger verify ${dir}; the steward role put back serves it again)`,
  );
}
