/**
 * The output guard: output that is empty, or whitespace only, is no output, and the work is not done (docs/node.md
 * "Provider", docs/pools.md "The output guard"). One rule for a provider's own work (its failed receipt says
 * EXEC_EMPTY_OUTPUT, provider.ts) and for a pool's (POOL_OUTPUT_EMPTY, roles/pool-member/coordinator.ts), so a broken
 * command that prints a blank line fails alike whoever runs it; before, a solo provider signed it `completed` and the
 * buyer accepted it. Whitespace is what String.prototype.trim removes (ASCII's and Unicode's spaces and line breaks,
 * the byte-order mark) from the output read as UTF-8; bytes that are not UTF-8 are not whitespace. Pure.
 */
import { C0Error } from '../../errors.js';
import { plural } from '../../util/text.js';

/** How much of the output is decoded at a time past its ASCII whitespace (the first character that is not blank ends the look). */
const CHUNK = 64 * 1024;

/** Whether `out` is empty or whitespace only. */
export function isBlankOutput(out: Uint8Array): boolean {
  for (let i = 0; i < out.length; i++) {
    const b = out[i]!;
    if (b === 0x20 || (b >= 0x09 && b <= 0x0d)) continue;
    if (b < 0x80) return false;
    // a multi-byte character: Unicode's spaces (U+00A0, U+2028, U+3000, U+FEFF …) are whitespace too. Decoded a chunk
    // at a time, so 16 MiB of output that is not blank costs one chunk, not a 16 MiB string.
    const d = new TextDecoder();
    for (let at = i; at < out.length; at += CHUNK) {
      if (d.decode(out.subarray(at, at + CHUNK), { stream: true }).trim() !== '') return false;
    }
    return d.decode().trim() === '';
  }
  return true;
}

/** What blank output is, for a failure's message: `no output`, or `only whitespace (N bytes)`; undefined when it is not blank. */
export function blankOutputText(out: Uint8Array): string | undefined {
  if (out.length === 0) return 'no output';
  return isBlankOutput(out) ? `only whitespace (${plural(out.length, 'byte')})` : undefined;
}

/** A provider's own work's output through the guard: blank output is the failure EXEC_EMPTY_OUTPUT (the executors already refuse empty output so). */
export function guardOutput(out: Uint8Array): Uint8Array {
  const blank = blankOutputText(out);
  if (blank) throw new C0Error('EXEC_EMPTY_OUTPUT', `the work produced ${blank}: work not done`);
  return out;
}
