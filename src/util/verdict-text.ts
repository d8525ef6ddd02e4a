/**
 * One provider's eligibility for a job as a line, as `c0mpute run` narrates the decision (src/cli/render.ts) and a
 * job's page in the console lists it (ui/job-walk.ts): `✔ <name> eligible`, or `✘ <name>: <message> [<CODE>]; …`
 * with every failure. Free of Node and of the DOM.
 */
export function verdictLine(v: { provider: string; eligible: boolean; failures: ReadonlyArray<{ code: string; message: string }> }, names: (did: string) => string): string {
  return v.eligible ? `✔ ${names(v.provider)} eligible` : `✘ ${names(v.provider)}: ${v.failures.map((f) => `${f.message} [${f.code}]`).join('; ')}`;
}
