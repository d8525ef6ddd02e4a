/**
 * A buyer's verdict on a receipt as `run`, `jobs` and the console say it (src/cli/render.ts, src/cli/commands/node.ts,
 * ui/narrate.ts, ui/views/jobs.tsx, ui/views/reputation.tsx). A failed receipt is countersigned `accepted` too: the
 * buyer agrees that the failure happened, and the failure counts against the provider through the receipt itself
 * (docs/node.md "Buyer"). Printed as "accepted" next to "failed" it read as the buyer accepting bad work (QA qaRep
 * F11), so it is said `acknowledged`; the record's `verdict` and every wire field stay `accepted`. Free of Node and of
 * the DOM.
 */
export function verdictWord(verdict: unknown, receiptStatus: unknown): string {
  return verdict === 'accepted' && receiptStatus === 'failed' ? 'acknowledged' : String(verdict);
}
