/** A DID shortened for a table or a sentence (its own module: the CLI prints it without loading the market). */
export function shortDid(d: string): string {
  return d.length > 20 ? `${d.slice(0, 14)}…${d.slice(-6)}` : d;
}
