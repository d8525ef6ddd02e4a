/**
 * Buying a training run as a gang (docs/training.md "A training run bought as
 * a gang", `c0mpute train buy`): pick N eligible providers from the market,
 * put them into run.yaml as the members, and check what the N member jobs
 * returned — every member completed with a receipt it signed over the output
 * it sent, for this run, and all report the same final weights, the weights
 * the single-process run of the same spec reaches (when given). Pure
 * functions; the CLI drives the daemon's routes with them.
 */
import { stringify as stringifyYaml } from 'yaml';
import { parsePlainYaml } from '../../util/yaml.js';
import { C0Error } from '../../errors.js';
import { hashHex } from '../../records/address.js';

/** One advert as GET /v1/market lists it. */
export interface MarketAdvert {
  signer: string;
  live: boolean;
  reputation?: number;
  freeSlots?: number;
  record: { workloads: string[]; expiresAt?: number };
}

/**
 * The N providers to hire: live adverts offering `workload`, best reputation
 * first, then most free slots, then by DID (a stable order). Fewer than N is
 * TRAIN_GANG_SHORT (nothing is bought).
 */
export function pickMembers(adverts: MarketAdvert[], workload: string, n: number): string[] {
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new C0Error('TRAIN_GANG_SIZE', `--providers must be 1 to 64, got ${n}`, { field: 'providers' });
  const ok = adverts.filter((a) => a.live && a.record.workloads.includes(workload));
  const sorted = [...new Map(ok.map((a) => [a.signer, a])).values()].sort((a, b) => (b.reputation ?? 0) - (a.reputation ?? 0) || (b.freeSlots ?? 0) - (a.freeSlots ?? 0) || (a.signer < b.signer ? -1 : 1));
  if (sorted.length < n) throw new C0Error('TRAIN_GANG_SHORT', `the market has ${sorted.length} live provider(s) offering ${workload}, the gang needs ${n}`, { field: 'providers', detail: { have: sorted.length, need: n } });
  return sorted.slice(0, n).map((a) => a.signer);
}

/**
 * run.yaml with `members` replaced by these DIDs. Members reach each other by
 * DID, so the bundle's addresses are placeholders (the address book is not
 * part of the signed spec).
 */
export function withMembers(yamlText: string, dids: string[]): string {
  let y: unknown;
  try {
    y = parsePlainYaml(yamlText);
  } catch (e) {
    throw new C0Error('TRAIN_RUN_FILE', `run.yaml: ${(e as Error).message}`);
  }
  if (typeof y !== 'object' || y === null || Array.isArray(y)) throw new C0Error('TRAIN_RUN_FILE', 'run.yaml: not a mapping');
  return stringifyYaml({ ...(y as Record<string, unknown>), members: dids.map((did) => ({ did, addr: '/ip4/127.0.0.1/tcp/1' })) });
}

/** What /v1/run returned for one member's job (wire form). */
export interface MemberJobResult {
  status: string;
  output?: string;
  receipt?: { address: string; signer: string; record: { status: string; outputHash?: string; energy?: { uj: number; grade: string } } };
  attempts?: Array<{ provider: string; outcome: string; detail?: string }>;
}

export interface MemberReport {
  did: string;
  status: string;
  receipt?: string;
  weights?: string;
  energy?: { uj: number; grade: string };
  problem?: string;
}

export interface GangReport {
  run: string;
  /** The weights every member reported, when all completed and agree. */
  weights?: string;
  /** The single-process run's weights, when the buyer computed them. */
  reference?: string;
  ok: boolean;
  members: MemberReport[];
}

/**
 * Check the member jobs' results (in member order) against the run; with
 * `reference` (the weights of `referenceFor(run)`), the agreed weights must be
 * those too. Members that all finish agree with each other even when one of
 * them fed the all-reduce a contribution that is in range but not its
 * gradient (every member applies the same sum); the reference does not: a
 * gang whose members all finished, none dropped, reaches it bit for bit.
 */
export function checkGang(runAddr: string, members: string[], results: MemberJobResult[], reference?: string): GangReport {
  const reports = members.map((did, i): MemberReport => {
    const r = results[i];
    if (!r) return { did, status: 'missing', problem: 'no result' };
    const base: MemberReport = { did, status: r.status, ...(r.receipt ? { receipt: r.receipt.address } : {}), ...(r.receipt?.record.energy ? { energy: r.receipt.record.energy } : {}) };
    if (r.status !== 'completed' || !r.output || !r.receipt) return { ...base, problem: r.attempts?.map((a) => `${a.outcome}${a.detail ? ` (${a.detail})` : ''}`).join('; ') || r.status };
    const bytes = Buffer.from(r.output, 'base64');
    if (r.receipt.signer !== did) return { ...base, problem: `receipt signed by ${r.receipt.signer}` };
    if (r.receipt.record.outputHash !== hashHex(bytes)) return { ...base, problem: 'output does not match the receipt' };
    let o: { run?: string; member?: string; status?: string; weights?: string };
    try {
      o = JSON.parse(bytes.toString('utf8')) as typeof o;
    } catch {
      return { ...base, problem: 'output is not a member report' };
    }
    if (o.run !== runAddr || o.member !== did) return { ...base, problem: 'output is for another run or member' };
    if (o.status !== 'done' || !o.weights) return { ...base, problem: `member status ${String(o.status)}` };
    return { ...base, weights: o.weights };
  });
  const ws = new Set(reports.map((m) => m.weights));
  const agree = reports.every((m) => !m.problem) && ws.size === 1;
  if (!agree && reports.every((m) => !m.problem)) for (const m of reports) m.problem = 'members disagree on the final weights';
  const ok = agree && (reference === undefined || reports[0]!.weights === reference);
  if (agree && !ok) for (const m of reports) m.problem = 'the agreed weights are not the single-process run’s: some member’s contribution was not its work';
  return { run: runAddr, ok, ...(agree ? { weights: reports[0]!.weights! } : {}), ...(reference === undefined ? {} : { reference }), members: reports };
}
