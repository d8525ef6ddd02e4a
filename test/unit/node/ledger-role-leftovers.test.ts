/**
 * The witness and steward roles taken off at a restart (src/node/ledger-role-leftovers.ts; docs/node.md "Changing
 * roles"; QA witness pass, finding 5), on an in-process overlay (real LevelDB, real libp2p on 127.0.0.1):
 * - a node that kept witness evidence, restarted with `roles: [buyer]`, warns naming what it holds, and its overlay
 *   still has the witness's store behind GET /v1/witness (`role: "off"`) and GET /v1/witness/evidence/:steward
 *   (before: ROLE_NOT_ENABLED); a display node reads it too, and warns of nothing;
 * - a node holding a steward ledger, restarted without the steward role, warns naming the ledger's directory and
 *   what buyers get (before: only CONFIG_SECTION_UNREAD for the `steward` section, nothing about the ledger).
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { closeDb, openDb, type Db } from '../../../src/store/db.js';
import { Ledger, sealEntries } from '../../../src/ledger/index.js';
import { Witness } from '../../../src/ledger/witness.js';
import { networksOf, parseConfig } from '../../../src/node/config.js';
import { OverlayNode } from '../../../src/node/overlay.js';
import type { Logger } from '../../../src/util/log.js';
import { systemClock } from '../../../src/util/clock.js';
import { admitted } from '../ledger/helpers.js';

function capturingLogger(): { log: Logger; warns: string[] } {
  const warns: string[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void ((JSON.parse(s) as { level: number }).level >= 40 && warns.push((JSON.parse(s) as { msg: string }).msg)) }) as unknown as Logger;
  return { log, warns };
}

async function withNode(fn: (n: { dir: string; db: Db; signer: Ed25519Signer; start: (roles: string[], o?: { display?: boolean }) => Promise<{ o: OverlayNode; warns: string[] }> }) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'c0-ledger-leftovers-'));
  const db = await openDb(join(dir, 'db'));
  const signer = Ed25519Signer.generate();
  const started: OverlayNode[] = [];
  const start = async (roles: string[], o: { display?: boolean } = {}) => {
    const config = parseConfig({ roles, network: { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, resyncMs: 0 } });
    const { roles: r, ...network } = networksOf(config)[0]!;
    const { log, warns } = capturingLogger();
    const node = await OverlayNode.start({ dataDir: dir, db, identity: { did: didFromPublicKey(signer.publicKey), signer, keyFile: join(dir, 'identity.key') }, config, network, roles: r, clock: systemClock, log, ...(o.display ? { display: true } : {}) });
    started.push(node);
    return { o: node, warns };
  };
  try {
    await fn({ dir, db, signer, start });
  } finally {
    for (const o of started) await o.stop();
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the witness role taken off: the evidence it kept stays readable (role off) and is said at start', async () => {
  await withNode(async ({ db, signer, start }) => {
    const s = Ed25519Signer.generate();
    const steward = didFromPublicKey(s.publicKey);
    const [a] = sealEntries([admitted('a')], s);
    const [b] = sealEntries([admitted('b')], s);
    assert.ok(await new Witness(db, signer, { stewards: [steward] }).keep(steward, a!.bytes, b!.bytes));

    const { o, warns } = await start(['buyer']);
    assert.ok(o.witness, 'the store behind GET /v1/witness');
    assert.equal((await o.witness.status()).role, 'off');
    assert.equal((await o.witness.evidenceOf(steward)).evidence.length, 1);
    assert.equal(warns.filter((w) => /the witness role is not configured on this overlay, but this node holds what it kept as a witness \(heads of 0 stewards, 1 evidence pair\)/.test(w)).length, 1, warns.join('\n'));
    await o.stop();

    const display = await start([], { display: true });
    assert.equal((await display.o.witness!.evidenceOf(steward)).evidence.length, 1, 'an offline `witness evidence` reads it');
    assert.deepEqual(display.warns.filter((w) => /witness role/.test(w)), []);
  });
});

test('no witness state: no witness on the overlay (ROLE_NOT_ENABLED as before), nothing said', async () => {
  await withNode(async ({ start }) => {
    const { o, warns } = await start(['buyer']);
    assert.equal(o.witness, undefined);
    assert.deepEqual(warns.filter((w) => /witness role|steward role/.test(w)), []);
  });
});

test('the steward role taken off: the ledger left at <data-dir>/steward/<overlay>/ledger is named at start', async () => {
  await withNode(async ({ dir, signer, start }) => {
    const ledger = join(dir, 'steward', 'public', 'ledger');
    const l = await Ledger.open(ledger, { signer });
    await l.append(admitted('c1'));
    await l.close();
    const { warns } = await start(['buyer']);
    const said = warns.filter((w) => w.includes('the steward role is not configured on this overlay, but this node holds a steward ledger at'));
    assert.equal(said.length, 1, warns.join('\n'));
    assert.ok(said[0]!.includes(ledger));
    assert.match(said[0]!, /STEWARD_UNREACHABLE/);
  });
});
