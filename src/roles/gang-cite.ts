/**
 * How a member job cites the gang claim it runs under (pool/1 §2.4;
 * docs/training.md "A gang on a stewarded overlay"): the job's signed `params`
 * are JSON {claim, member}, the claim being the run's address and member the
 * index in its member list. The steward binds the job to the claim on it
 * (src/roles/steward-gangs.ts); the provider checks it covers itself
 * (src/roles/trainer/member-job.ts).
 */
export interface GangCite {
  claim: string;
  member: number;
}

export function citeParams(c: GangCite): string {
  return JSON.stringify({ claim: c.claim, member: c.member });
}

/** The citation in a job's `params`; undefined when they hold none. */
export function citeOf(params: string | undefined): GangCite | undefined {
  if (!params) return undefined;
  try {
    const p = JSON.parse(params) as Partial<GangCite>;
    if (typeof p === 'object' && p !== null && typeof p.claim === 'string' && typeof p.member === 'number') return { claim: p.claim, member: p.member };
  } catch {
    /* not a citation */
  }
  return undefined;
}
