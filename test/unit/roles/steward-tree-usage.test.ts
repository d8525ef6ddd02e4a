/**
 * The tree edited against the ledger (src/roles/steward-tree-usage.ts, docs/overlays.md "Editing the tree"; QA qaUp F3):
 * a steward started with an entitlement the ledger charges taken out of its tree, and a guarantee lowered below what
 * is settled, says both at start (STEWARD_TREE_LACKS_ENTITLEMENT, STEWARD_GUARANTEE_BELOW_SETTLED, each entitlement
 * with its figures), and `status()` keeps the usage under `notInTree`, so `steward status` still adds up to the
 * ledger. Before, team-c's spend vanished from status and the "(all below)" total, with no log line. The whole
 * Steward over a real Ledger and LevelDB; the overlay is a stub.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job } from '../../../src/records/kinds.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { Ledger } from '../../../src/ledger/index.js';
import type { Logger } from '../../../src/util/log.js';
import { teamLines, type TeamRow } from '../../../src/cli/commands/steward.js';
import { tempDir, steward as stewardKey, admitted, released } from '../ledger/helpers.js';
import { stewardOnStub } from './steward-stub.js';

const TREE_V1 = `entitlements:
  - { id: acme, guarantee_uj: 2000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
  - { id: team-a, parent: acme, guarantee_uj: 600000000, guarantee_devices: 1, over_quota_weight: 1, priority: 2 }
  - { id: team-b, parent: acme, guarantee_uj: 300000000, guarantee_devices: 1, over_quota_weight: 1, priority: 1, limit_uj: 400000000 }
  - { id: team-c, parent: acme, guarantee_uj: 200000000, guarantee_devices: 1, over_quota_weight: 0, priority: 0 }
`;
// the "second day" edit: team-c taken out, team-a's guarantee cut below what it settled
const TREE_V2 = TREE_V1.split('\n')
  .filter((l) => !l.includes('id: team-c'))
  .join('\n')
  .replace('id: team-a, parent: acme, guarantee_uj: 600000000', 'id: team-a, parent: acme, guarantee_uj: 200000000');

function capturingLogger(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }) as unknown as Logger;
  return { log, lines };
}

describe('the tree edited against the ledger', () => {
  it('an entitlement the ledger charges and the tree lacks, and a guarantee below the settled spend: said at start, and kept in status', async () => {
    const t = tempDir('c0-tree-usage-');
    const db = await openDb(join(t.dir, 'db'));
    try {
      // the ledger as the first day left it: team-a 270.6 J, team-b 43.5 J, team-c 156.1 J settled; one team-c claim open
      const dir = join(t.dir, 'steward', 't');
      const l = await Ledger.open(join(dir, 'ledger'), { createdMark: join(dir, 'ledger.created'), signer: stewardKey });
      for (const ev of [
        admitted('a1', 'team-a', 300_000_000),
        released('a1', 270_573_918),
        admitted('b1', 'team-b', 50_000_000),
        released('b1', 43_518_501),
        admitted('c1', 'team-c', 60_000_000),
        released('c1', 156_101_425),
        admitted('c2', 'team-c', 5_000_000),
      ])
        await l.append(ev);
      await l.close();

      writeFileSync(join(t.dir, 'tree.yaml'), TREE_V1);
      const quiet = capturingLogger();
      let st = await stewardOnStub(t.dir, db, new Map<string, Opened<Job>>(), { log: quiet.log });
      const codes = (lines: Array<Record<string, unknown>>) => lines.map((x) => x.code).filter((c) => typeof c === 'string' && c.startsWith('STEWARD_'));
      assert.deepEqual(codes(quiet.lines), [], 'a tree that agrees with the ledger: nothing said');
      const before = await st.s.status();
      assert.equal(before.notInTree, undefined);
      await st.s.stop();

      writeFileSync(join(t.dir, 'tree.yaml'), TREE_V2);
      const { log, lines } = capturingLogger();
      st = await stewardOnStub(t.dir, db, new Map<string, Opened<Job>>(), { log });
      try {
        const lacks = lines.find((x) => x.code === 'STEWARD_TREE_LACKS_ENTITLEMENT');
        assert.ok(lacks, `a warning names the entitlement the tree lacks: ${JSON.stringify(lines)}`);
        assert.equal(lacks.level, 40);
        assert.deepEqual(lacks.entitlements, [{ id: 'team-c', spent_uj: 156_101_425, reserved_uj: 5_000_000, open_claims: 1 }]);
        assert.match(String(lacks.msg), /team-c \(spent 156\.1 J, 1 open claim reserving 5\.0 J\)/);
        const below = lines.find((x) => x.code === 'STEWARD_GUARANTEE_BELOW_SETTLED');
        assert.ok(below, 'a warning names the guarantee below the settled spend');
        assert.equal(below.level, 40);
        assert.deepEqual(below.entitlements, [{ id: 'team-a', guarantee_uj: 200_000_000, settled_uj: 270_573_918 }]);
        assert.match(String(below.msg), /team-a settled 270\.6 J, guarantee 200\.0 J/);

        const s = (await st.s.status()) as { teams: Array<TeamRow & { used_uj: number }>; notInTree?: Array<Record<string, number | string>> };
        assert.deepEqual(
          s.teams.map((x) => x.id),
          ['acme', 'team-a', 'team-b'],
          'the tree’s rows are as before (added fields only)',
        );
        assert.deepEqual(s.notInTree, [{ id: 'team-c', used_uj: 161_101_425, spent_uj: 156_101_425, reserved_uj: 5_000_000, borrowed_uj: 0, held_devices: 1, open_claims: 1 }]);
        // everything the ledger charges is in the status: the figures add up to the ledger's
        const sum = [...s.teams, ...(s.notInTree as unknown as TeamRow[])].reduce((n, x) => n + x.spent_uj, 0);
        assert.equal(sum, 270_573_918 + 43_518_501 + 156_101_425);

        const text = teamLines(s.teams, s.notInTree as never);
        assert.ok(text.some((x) => /^ {2}\(all below\) +314\.1 J/.test(x)), text.join('\n'));
        assert.ok(text.some((x) => /^not in the tree/.test(x)), text.join('\n'));
        assert.ok(text.some((x) => /^ {2}team-c +156\.1 J +5\.0 J +0\.0 J +1 +1$/.test(x)), text.join('\n'));
        assert.ok(text.some((x) => /^\(ledger total\) +470\.2 J +5\.0 J/.test(x)), text.join('\n'));
      } finally {
        await st.s.stop();
      }
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('a tree that agrees prints no "not in the tree" group', () => {
    const row = { id: 'acme', priority: 0, guarantee_uj: 1, guarantee_devices: 1, spent_uj: 0, reserved_uj: 0, borrowed_uj: 0, held_devices: 0, open_claims: 0 };
    assert.deepEqual(
      teamLines([row]).filter((x) => /not in the tree|ledger total/.test(x)),
      [],
    );
  });
});
