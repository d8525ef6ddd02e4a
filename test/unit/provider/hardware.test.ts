/** Hardware for the advert: nvidia-smi parsing, config overrides, OS figures. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectHardware, detectNvidia, mergeHardware, parseNvidiaSmi } from '../../../src/roles/provider/hardware.js';

// `nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader,nounits`
const SAMPLE = ['NVIDIA H100 80GB HBM3, 81559, 9.0', 'NVIDIA GeForce RTX 4090, 24564, 8.9', 'NVIDIA H100 80GB HBM3, 81559, 9.0', 'NVIDIA H100 80GB HBM3, 81559, 9.0', ''].join('\n');

describe('parseNvidiaSmi', () => {
  test('identical cards are grouped with a count; compute capability becomes a feature', () => {
    assert.deepEqual(parseNvidiaSmi(SAMPLE), [
      { model: 'NVIDIA GeForce RTX 4090', vramMiB: 24564, features: ['cuda', 'sm89'], count: 1 },
      { model: 'NVIDIA H100 80GB HBM3', vramMiB: 81559, features: ['cuda', 'sm90'], count: 3 },
    ]);
  });

  test('cards of one model with different VRAM are separate entries', () => {
    const gpus = parseNvidiaSmi('Tesla T4, 15360, 7.5\nTesla T4, 16384, 7.5\n');
    assert.deepEqual(
      gpus.map((g) => [g.vramMiB, g.count]),
      [
        [15360, 1],
        [16384, 1],
      ],
    );
  });

  test('an unknown compute capability leaves only `cuda`; junk lines are skipped', () => {
    const gpus = parseNvidiaSmi('Old Card, 2048, [N/A]\nnot a gpu line\n, 100, 8.0\nBad Mem, abc, 8.0\nZero, 0, 8.0\r\n');
    assert.deepEqual(gpus, [{ model: 'Old Card', vramMiB: 2048, features: ['cuda'], count: 1 }]);
  });

  test('nothing on empty output', () => {
    assert.deepEqual(parseNvidiaSmi(''), []);
  });
});

describe('mergeHardware', () => {
  const detected = { cpuCores: 8, memoryMiB: 32_000, gpus: [{ model: 'X', vramMiB: 1000, features: ['cuda'], count: 1 }] };

  test('any given field replaces the detected one; others stay', () => {
    assert.deepEqual(mergeHardware(detected, { cpuCores: 4 }), { ...detected, cpuCores: 4 });
    assert.deepEqual(mergeHardware(detected, { memoryMiB: 1024, cpuCores: undefined }), { ...detected, memoryMiB: 1024 });
    const gpus = [{ model: 'Y', vramMiB: 2000, count: 2 }];
    assert.deepEqual(mergeHardware(detected, { gpus }), { cpuCores: 8, memoryMiB: 32_000, gpus });
  });

  test('an empty GPU list removes the GPUs; no override keeps everything', () => {
    assert.deepEqual(mergeHardware(detected, { gpus: [] }), { cpuCores: 8, memoryMiB: 32_000 });
    assert.deepEqual(mergeHardware(detected, undefined), detected);
  });
});

describe('detectHardware', () => {
  test('with nvidiaSmi: false, CPU cores and memory come from the OS and there are no GPUs', async () => {
    const hw = await detectHardware({ nvidiaSmi: false });
    assert.deepEqual(hw, { cpuCores: availableParallelism(), memoryMiB: Math.floor(totalmem() / (1024 * 1024)) });
    assert.ok(hw.cpuCores >= 1 && hw.memoryMiB >= 1);
  });

  test('a missing nvidia-smi means no GPUs, not an error', async () => {
    assert.deepEqual(await detectNvidia(join(tmpdir(), 'c0-no-such-nvidia-smi'), 2000), []);
    const hw = await detectHardware({ nvidiaSmi: join(tmpdir(), 'c0-no-such-nvidia-smi') });
    assert.equal(hw.gpus, undefined);
  });
});
