/**
 * Checking a step commitment's inclusion in a committed epoch
 * (`c0mpute train verify`; docs/training.md "Verifying"). From the run, the
 * epoch commitment, its witnesses and the step commitment alone: the epoch
 * counts exactly the run's members less the ones it records as dropped (none
 * in view 0), and is signed by the elected
 * coordinator of (run, epoch) among them; each witness is named by the run, a
 * counted member other than the coordinator, and countersigned this epoch
 * commitment and root, and there is at least one (TRAIN_VERIFY_NO_WITNESS:
 * otherwise one member's say-so would be a committed epoch); the step
 * commitment is signed by a counted member, for this run, view and range (the
 * epoch's own steps, of an epoch the run has), a last step's weights are the
 * epoch's; and
 * the inclusion proof leads from its address to the root. Pure.
 */
import { C0Error } from '../errors.js';
import { open, type Opened } from '../records/envelope.js';
import { electCoordinator } from './aggregator.js';
import { merkleProof, verifyProof, type InclusionProof } from './merkle.js';
import { TRAIN_T, type TrainEpoch, type TrainRun, type TrainStep, type TrainWitness } from './record-kinds.js';

export interface VerifyInput {
  run: Uint8Array;
  epoch: Uint8Array;
  witnesses: Uint8Array[];
  step: Uint8Array;
  /** The proof to check; when absent it is built from `leaves`. */
  proof?: InclusionProof;
  leaves?: string[];
}

export interface VerifyResult {
  run: string;
  epoch: number;
  root: string;
  coordinator: string;
  witnesses: string[];
  worker: string;
  step: number;
  proof: InclusionProof;
}

const bad = (code: string, msg: string): never => {
  throw new C0Error(code, msg);
};

/**
 * An input record opened, or its failure (ENVELOPE_BAD_SIGNATURE for a forged one, RECORD_WRONG_TYPE, …) with the code
 * kept and the input named: `the step commitment: signature does not verify for …`.
 */
function openInput<T>(bytes: Uint8Array, type: string, what: string): Opened<T> {
  try {
    return open(bytes, type) as Opened<T>;
  } catch (e) {
    if (e instanceof C0Error) throw new C0Error(e.code, `${what}: ${e.message}`, { field: what, ...(e.detail ? { detail: e.detail } : {}) });
    throw e;
  }
}

export function verifyInclusion(i: VerifyInput): VerifyResult {
  const run = openInput<TrainRun>(i.run, TRAIN_T.run, 'the run');
  const ep = openInput<TrainEpoch>(i.epoch, TRAIN_T.epoch, 'the epoch commitment');
  const e = ep.record;
  if (e.run !== run.address) bad('TRAIN_VERIFY_WRONG_RUN', 'the epoch commitment is for another run');
  // an epoch covers its own steps, of an epoch the run has (the leaf count follows from the range: a rule of the record)
  const spe = run.record.stepsPerEpoch;
  if (e.epoch >= run.record.epochs) bad('TRAIN_VERIFY_OUT_OF_EPOCH', `epoch ${e.epoch}: the run has ${run.record.epochs}`);
  if (e.fromStep !== e.epoch * spe || e.toStep !== e.fromStep + spe - 1) bad('TRAIN_VERIFY_OUT_OF_EPOCH', `the epoch commitment covers steps ${e.fromStep}–${e.toStep}, not epoch ${e.epoch}’s (${e.epoch * spe}–${e.epoch * spe + spe - 1})`);
  if (e.members.some((m) => !run.record.members.includes(m))) bad('TRAIN_VERIFY_NOT_MEMBER', 'the epoch counts a DID the run does not list');
  const dropped = e.dropped ?? [];
  if (dropped.some((m) => !run.record.members.includes(m))) bad('TRAIN_VERIFY_MEMBERS', 'the epoch records as dropped a DID the run does not list');
  // One view change may drop several members at once (everyone not in the survivors' intersection), so the count is not bounded by the view; view 0 is the run's members.
  if (dropped.length > 0 && e.view === 0) bad('TRAIN_VERIFY_MEMBERS', 'view 0 is the run’s members: nobody can have been dropped');
  const expected = run.record.members.filter((m) => !dropped.includes(m));
  if (e.members.length !== expected.length || e.members.some((m, k) => m !== expected[k])) bad('TRAIN_VERIFY_MEMBERS', 'the epoch’s members are not the run’s members less the dropped ones');
  if (electCoordinator(run.address, e.epoch, e.members) !== ep.signer) bad('TRAIN_VERIFY_NOT_COORDINATOR', 'the epoch commitment is not signed by the elected coordinator');
  const witnesses: string[] = [];
  for (const [k, wb] of i.witnesses.entries()) {
    const w = openInput<TrainWitness>(wb, TRAIN_T.witness, `witness ${k}`);
    if (w.record.epochCommitment !== ep.address || w.record.root !== e.root) bad('TRAIN_VERIFY_WITNESS', `witness ${w.signer} countersigned another commitment`);
    if (w.signer === ep.signer) bad('TRAIN_VERIFY_WITNESS', 'the coordinator cannot witness itself');
    const allowed = run.record.witnesses ?? run.record.members;
    if (!allowed.includes(w.signer)) bad('TRAIN_VERIFY_WITNESS', `witness ${w.signer} is not named by the run`);
    if (!e.members.includes(w.signer)) bad('TRAIN_VERIFY_WITNESS', `witness ${w.signer} is not a member counted in this epoch`);
    if (!witnesses.includes(w.signer)) witnesses.push(w.signer);
  }
  if (witnesses.length === 0) bad('TRAIN_VERIFY_NO_WITNESS', 'no counted member other than the coordinator countersigned this epoch commitment');
  const st = openInput<TrainStep>(i.step, TRAIN_T.step, 'the step commitment');
  const s = st.record;
  if (s.run !== run.address) bad('TRAIN_VERIFY_WRONG_RUN', 'the step commitment is for another run');
  if (!e.members.includes(st.signer)) bad('TRAIN_VERIFY_NOT_MEMBER', 'the step commitment’s signer is not counted in this epoch');
  if (s.view !== e.view || s.step < e.fromStep || s.step > e.toStep) bad('TRAIN_VERIFY_OUT_OF_EPOCH', `step ${s.step} (view ${s.view}) is not in this epoch`);
  if (s.step === e.toStep && s.weights !== e.weights) bad('TRAIN_VERIFY_WEIGHTS', `the epoch’s weights ${e.weights} are not the ones its last step reached (${s.weights})`);
  let proof = i.proof;
  if (!proof) {
    const idx = (i.leaves ?? []).indexOf(st.address);
    if (idx < 0) bad('TRAIN_PROOF_NOT_INCLUDED', 'the step commitment is not among the epoch’s leaves');
    proof = merkleProof(i.leaves!, idx);
  }
  if (proof.leaf !== st.address) bad('TRAIN_PROOF_INVALID', 'the proof is for another leaf');
  if (proof.leaves !== e.leaves) bad('TRAIN_PROOF_INVALID', 'the proof’s leaf count differs from the epoch’s');
  verifyProof(proof, e.root);
  return { run: run.address, epoch: e.epoch, root: e.root, coordinator: ep.signer, witnesses, worker: st.signer, step: s.step, proof };
}
