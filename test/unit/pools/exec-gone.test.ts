/**
 * A pool member whose exec program goes away after start (third-round review): its executors are built once at start
 * (provider-wiring.ts poolExecutors, as the provider builds its own), so the start check (the command must be an
 * executable file) does not run again at every call. The coordinator still answers mayQuote (it asks for its own
 * executor) instead of throwing CONFIG_INVALID, and a run dispatched to the member fails EXEC_SPAWN_FAILED with the
 * executor's warning. Three members over their own stores (member-rig.ts), every one running the same exec program.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { poolExecutors } from '../../../src/node/provider-wiring.js';
import type { C0Error } from '../../../src/errors.js';
import { Rig, MEMBERS, ctx, job, jobChosen, offer } from './member-rig.js';

const rig = new Rig();
const dir = mkdtempSync(join(tmpdir(), 'c0-exec-gone-'));
const [A, B] = MEMBERS as [string, string, string];

describe('a pool member whose exec program goes away after start', () => {
  after(async () => {
    await rig.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the coordinator goes on answering mayQuote, and a dispatched run fails EXEC_SPAWN_FAILED with a warning', async () => {
    const prog = join(dir, 'my-job');
    writeFileSync(prog, '#!/bin/sh\ncat\n');
    chmodSync(prog, 0o755);
    const warns: string[] = [];
    const log = { warn: (_o: object, m: string) => void warns.push(m) } as never;
    const w = await rig.world('exec-gone', { extra: () => ({ executor: poolExecutors({ 'builtin.sha256': { executor: { type: 'exec', command: [prog] } } }, log) }) });
    const ms = [...w.members.values()];
    const { job: j } = job();
    const quoting = (): Array<boolean | string> =>
      ms.map((m) => {
        try {
          return m.mayQuote(j);
        } catch (e) {
          return (e as C0Error).code;
        }
      });
    const before = quoting();
    assert.equal(before.filter((x) => x === true).length, 1, `one coordinator quotes (${JSON.stringify(before)})`);
    rmSync(prog);
    assert.deepEqual(quoting(), before, 'the program gone: the same answers, none thrown');
    const chosen = jobChosen((m) => m === B);
    const err = await w.members.get(A)!.run(chosen.job, offer(chosen.job, A), ctx(chosen.input)).then(
      () => undefined,
      (e: unknown) => e as C0Error,
    );
    assert.equal(err?.code, 'EXEC_SPAWN_FAILED', `the run fails as a spawn failure (${err?.code}: ${err?.message})`);
    assert.ok(warns.some((m) => m.includes('could not start')), `the executor said so (${JSON.stringify(warns)})`);
  });
});
