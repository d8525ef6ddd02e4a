/**
 * The part of a steward's ledger no witness has countersigned, worded once for `c0mpute steward status`, `c0mpute
 * ledger verify` and the console's Overlays view (ui/trust.ts): " (the last 16 entries are self-attested)".
 */
export function selfAttestedTail(length: number, witnessedLength: number): string {
  const tail = length - witnessedLength;
  if (tail <= 0) return '';
  return ` (${tail === 1 ? 'the last entry is' : `the last ${tail} entries are`} self-attested)`;
}
