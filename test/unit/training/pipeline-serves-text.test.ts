/**
 * How a stage's layers are said (src/training/pipeline.ts servesText; docs/training.md "Pipeline"): by their numbers,
 * both ends included, with the widths they go through, so two adjacent stages never read as sharing a layer; and a
 * stage's refusal of a route too long for it says what it serves and the likely cause. Before (QA qaTrn F9, F8), the
 * half-open range was printed `layers 0–1` / `1–2`, and the refusal read `a route of 1 stages; at most 0 can follow
 * this one (layers 1–2 of 2)`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { partition, servesText } from '../../../src/training/pipeline.js';
import { routeTooLong } from '../../../src/training/pipeline-net.js';

describe('what a stage serves, said', () => {
  it('one layer by its number and widths; several by both ends, included', () => {
    const two = { layers: [4, 16, 3] };
    assert.deepEqual(partition(two, 2).map((r) => servesText(two, r)), ['layer 0 of 2 (4→16)', 'layer 1 of 2 (16→3)']);
    const four = { layers: [256, 1024, 1024, 1024, 10] };
    assert.deepEqual(partition(four, 3).map((r) => servesText(four, r)), ['layer 0 of 4 (256→1024)', 'layer 1 of 4 (1024→1024)', 'layers 2–3 of 4 (1024→1024→10)']);
  });

  it('a route too long: what the stage serves, and that the stages are likely out of order', () => {
    const shape = { layers: [4, 16, 3] };
    assert.equal(routeTooLong(1, 0, shape, [1, 2]), 'a route of 1 more stage after this one, which serves layer 1 of 2 (16→3); at most 0 can follow it: it serves the last layer, so no stage comes after it: give the stages in order, stage 0 first');
    assert.match(routeTooLong(3, 1, { layers: [4, 8, 8, 3] }, [1, 2]), /^a route of 3 more stages after this one, which serves layer 1 of 3 \(8→8\); at most 1 can follow it: only 1 more layer comes after it/);
  });
});
