/**
 * The one place a price becomes a float: scoring (scheduling.md: "Floating
 * point appears only in scoring, where a rounding error changes a preference
 * rather than a correctness check"). Gates compare money exactly (amount.ts).
 */
export function priceForScoring(amount: string): number {
  return Number(amount);
}
