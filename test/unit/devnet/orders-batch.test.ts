/**
 * `devnet --orders --keep` printed `… batch plan <batch.yaml>`, which no shell takes, and the scenario's batch was
 * never written anywhere (QA qaDev F11). It now writes `<dir>/batch.yaml` and names it: the file must be the batch the
 * scenario runs, as `batch plan` and `batch run` read it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readBatchRunFile } from '../../../src/cli/batchfile.js';
import { ORDERS_BATCH_YAML, ordersBatch } from '../../../src/devnet/orders-scenario.js';

test('the --orders scenario\'s batch.yaml reads back, with the CLI\'s reader, as the batch and lines the scenario runs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-orders-batch-'));
  try {
    const f = join(dir, 'batch.yaml');
    writeFileSync(f, ORDERS_BATCH_YAML);
    assert.deepEqual(readBatchRunFile(f), ordersBatch());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
