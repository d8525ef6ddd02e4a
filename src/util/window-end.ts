/**
 * What the CLI (src/cli/render.ts) and the console (ui/views/jobs.tsx) add after "collected N offer(s) in T ms": why
 * the job's offer window ended (the run's `collected` event's `ended`, src/roles/buyer.ts WindowEnd). Nothing when its
 * whole length passed or the node stopped, or for a value it does not know (an older daemon's event has none). Free of
 * Node and of the DOM.
 */
export function windowEndText(ended: unknown): string {
  switch (ended) {
    case 'enough':
      return ': enough offers (buyer.enoughOffers)';
    case 'allowlist':
      return ': every provider on the job’s allowlist has offered';
    case 'all-quoted':
      return ': every provider that could win has quoted';
    default:
      return '';
  }
}
