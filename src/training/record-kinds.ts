/**
 * The training record kinds (docs/training.md "Records"; spec/compute-pool.md,
 * the worker: run, membership, per-step commitment, epoch commitment and its
 * witness countersignature). Schemas and rules only, with no imports from
 * src/records/kinds.ts, so kinds.ts can list them beside its own (one SCHEMAS
 * table drives validation and docs/protocol.md).
 */
import { C0Error } from '../errors.js';
import type { Field, Schema } from '../records/schema.js';

export const TRAIN_T = {
  run: 'c0mpute.train-run/1',
  member: 'c0mpute.train-member/1',
  step: 'c0mpute.train-step/1',
  epoch: 'c0mpute.train-epoch/1',
  witness: 'c0mpute.train-witness/1',
} as const;

export const LR_RE = /^0\.[0-9]{1,9}$|^[1-9]\.[0-9]{1,9}$|^[1-9]$/;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface TrainRun {
  name: string;
  model: { arch: 'mlp'; layers: number[] };
  data: { set: 'iris'; hash: string };
  init: { seed: number; weights: string };
  members: string[];
  witnesses?: string[];
  batch: number;
  stepsPerEpoch: number;
  epochs: number;
  lr: string;
  quant: { bits: number; feedback: 'yes' | 'no' };
  onFailure: 'continue' | 'stop';
  timeoutMs: number;
  createdAt: number;
}
export interface TrainMember {
  run: string;
  joinedAt: number;
}
export interface TrainStep {
  run: string;
  view: number;
  step: number;
  grad: string;
  weights: string;
  lossMicro: number;
  signedAt: number;
}
export interface TrainEpoch {
  run: string;
  epoch: number;
  view: number;
  fromStep: number;
  toStep: number;
  members: string[];
  leaves: number;
  root: string;
  weights: string;
  dropped?: string[];
  signedAt: number;
}
export interface TrainWitness {
  epochCommitment: string;
  run: string;
  epoch: number;
  root: string;
  witnessedAt: number;
}

const didList = (doc: string, optional = false): Field => ({ t: 'array', of: { t: 'did', doc: 'DID' }, min: 1, max: 64, order: 'sorted-unique', doc, ...(optional ? { optional: true as const } : {}) });

export const TRAIN_SCHEMAS: Record<string, Schema> = {
  [TRAIN_T.run]: {
    name: { t: 'text', re: NAME_RE, maxLen: 64, doc: 'run name' },
    model: {
      t: 'object',
      doc: 'the model',
      fields: {
        arch: { t: 'enum', values: ['mlp'], doc: 'architecture' },
        layers: { t: 'array', of: { t: 'uint', min: 1, max: 4096, doc: 'width' }, min: 2, max: 8, doc: 'layer widths, input first' },
      },
    },
    data: { t: 'object', doc: 'the data', fields: { set: { t: 'enum', values: ['iris'], doc: 'dataset' }, hash: { t: 'addr', doc: 'SHA-256 of the standardised split (src/training/data.ts)' } } },
    init: { t: 'object', doc: 'starting weights', fields: { seed: { t: 'uint', max: 0xffffffff, doc: 'initialiser seed' }, weights: { t: 'addr', doc: 'content address of the starting weights (float64 LE)' } } },
    members: didList('the workers, in DID order; rank = position'),
    witnesses: didList('who countersigns epoch commitments (default: the members other than the coordinator)', true),
    batch: { t: 'uint', min: 1, max: 4096, doc: 'rows per worker per step' },
    stepsPerEpoch: { t: 'uint', min: 1, max: 100_000, doc: 'steps in one epoch' },
    epochs: { t: 'uint', min: 1, max: 10_000, doc: 'epochs to run' },
    lr: { t: 'text', re: LR_RE, maxLen: 12, doc: 'learning rate, a decimal' },
    quant: { t: 'object', doc: 'gradient quantisation', fields: { bits: { t: 'uint', min: 8, max: 8, doc: 'bits per value (8)' }, feedback: { t: 'enum', values: ['yes', 'no'], doc: 'error feedback' } } },
    onFailure: { t: 'enum', values: ['continue', 'stop'], doc: 'when a member stops answering: continue without it from the last committed step, or stop' },
    timeoutMs: { t: 'uint', min: 100, max: 600_000, doc: 'a member silent this long is taken as gone', unit: 'ms' },
    createdAt: { t: 'time', doc: 'when signed' },
  },
  [TRAIN_T.member]: {
    run: { t: 'addr', doc: 'the run joined' },
    joinedAt: { t: 'time', doc: 'when signed' },
  },
  [TRAIN_T.step]: {
    run: { t: 'addr', doc: 'the run' },
    view: { t: 'uint', max: 64, doc: 'membership view (0 = the run’s members; +1 per recorded drop)' },
    step: { t: 'uint', doc: 'global step index' },
    grad: { t: 'addr', doc: 'SHA-256 of the worker’s quantised gradient (int32 LE) and exponents' },
    weights: { t: 'addr', doc: 'SHA-256 of the weights after the step (float64 LE)' },
    lossMicro: { t: 'uint', doc: 'the worker’s batch loss × 10⁶, rounded' },
    signedAt: { t: 'time', doc: 'when signed' },
  },
  [TRAIN_T.epoch]: {
    run: { t: 'addr', doc: 'the run' },
    epoch: { t: 'uint', doc: 'epoch index' },
    view: { t: 'uint', max: 64, doc: 'membership view the epoch ran under' },
    fromStep: { t: 'uint', doc: 'first step of the epoch' },
    toStep: { t: 'uint', doc: 'last step (inclusive)' },
    members: didList('the members counted, in DID order'),
    leaves: { t: 'uint', min: 1, doc: 'step commitments under the root (members × steps)' },
    root: { t: 'addr', doc: 'Merkle root over the step commitments’ addresses (docs/training.md)' },
    weights: { t: 'addr', doc: 'weights after the epoch’s last step' },
    dropped: didList('members dropped before this epoch (recorded failures)', true),
    signedAt: { t: 'time', doc: 'when signed' },
  },
  [TRAIN_T.witness]: {
    epochCommitment: { t: 'addr', doc: 'the epoch commitment countersigned' },
    run: { t: 'addr', doc: 'the run' },
    epoch: { t: 'uint', doc: 'epoch index' },
    root: { t: 'addr', doc: 'the root witnessed' },
    witnessedAt: { t: 'time', doc: 'when signed' },
  },
};

function rule(cond: boolean, code: string, field: string, msg: string): void {
  if (!cond) throw new C0Error(code, `${field}: ${msg}`, { field });
}

export const TRAIN_RULES: Record<string, (rec: never, signer: string) => void> = {
  [TRAIN_T.run]: (r: TrainRun) => {
    rule(r.batch >= 1, 'TRAIN_RUN_INVALID', 'batch', 'at least 1');
  },
  [TRAIN_T.member]: () => {},
  [TRAIN_T.step]: () => {},
  [TRAIN_T.epoch]: (e: TrainEpoch, signer: string) => {
    rule(e.toStep >= e.fromStep, 'TRAIN_EPOCH_RANGE_INVALID', 'toStep', 'must be ≥ fromStep');
    rule(e.members.includes(signer), 'TRAIN_EPOCH_SIGNER_NOT_MEMBER', 'members', 'the coordinator signing must be a counted member');
    rule(e.leaves === e.members.length * (e.toStep - e.fromStep + 1), 'TRAIN_EPOCH_LEAVES_INVALID', 'leaves', 'must be members × steps');
  },
  [TRAIN_T.witness]: () => {},
};

export const TRAIN_SIGNERS: Record<string, string> = {
  [TRAIN_T.run]: 'the run’s owner (who starts it, or the buyer)',
  [TRAIN_T.member]: 'the joining worker',
  [TRAIN_T.step]: 'the worker that did the step',
  [TRAIN_T.epoch]: 'the elected coordinator of the epoch',
  [TRAIN_T.witness]: 'a witness named by the run (or a member other than the coordinator)',
};

export const TRAIN_RULE_DOCS: Record<string, string[]> = {
  [TRAIN_T.run]: ['Started with `c0mpute train start run.yaml` (docs/training.md). `members` in DID order; a member’s rank is its position.'],
  [TRAIN_T.member]: ['Counts only when signed by a DID the run lists; sent to every other member before the first step.'],
  [TRAIN_T.step]: ['Counts toward an epoch root only from a registered member of the epoch’s view, once per (worker, step), with `weights` equal to the aggregator’s own weights after that step (`TRAIN_COMMIT_*` codes, docs/training.md).'],
  [TRAIN_T.epoch]: [
    '`toStep` ≥ `fromStep` (`TRAIN_EPOCH_RANGE_INVALID`); the signer is a counted member (`TRAIN_EPOCH_SIGNER_NOT_MEMBER`) and must be the elected coordinator for (run, epoch) (checked by witnesses and `train verify`); `leaves` = members × steps (`TRAIN_EPOCH_LEAVES_INVALID`).',
  ],
  [TRAIN_T.witness]: ['A witness countersigns one root per (run, epoch), only after recomputing it from the step commitments it was sent.'],
};
