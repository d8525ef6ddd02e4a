/** OS errors in the words an operator reads, shared by every message that names one (data dir, key file, --out). */
const WORDS: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EIO: 'input/output error',
};

/** The words for an OS error code, if it is one of those above. */
export function osWords(code: string | undefined): string | undefined {
  return code ? WORDS[code] : undefined;
}

/** An OS error as an operator reads it: "no space left on the device (ENOSPC: /path)", else its own message. */
export function osReason(err: unknown): string {
  const code = (err as { code?: string }).code;
  const words = osWords(code);
  const path = (err as { path?: string }).path;
  return words ? `${words} (${code}${path ? `: ${path}` : ''})` : (err as Error).message;
}
