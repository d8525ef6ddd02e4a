/**
 * One error type for everything an operator or a peer can cause.
 *
 * `code` is stable (tests and scripts match on it); `message` is for people;
 * `field` names the offending field when there is one. Validators throw these,
 * and adapters (gossip verdicts, CLI exit codes, HTTP statuses) map them.
 */
export class C0Error extends Error {
  readonly code: string;
  readonly field: string | undefined;
  readonly detail: Record<string, unknown> | undefined;

  constructor(code: string, message: string, opts: { field?: string; detail?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'C0Error';
    this.code = code;
    this.field = opts.field;
    this.detail = opts.detail;
  }
}

export function fail(code: string, message: string, field?: string, detail?: Record<string, unknown>): never {
  throw new C0Error(code, message, { ...(field === undefined ? {} : { field }), ...(detail === undefined ? {} : { detail }) });
}

export function isC0Error(e: unknown): e is C0Error {
  return e instanceof C0Error;
}

/** Run `fn`; return the C0Error it threw, or undefined. Any other error is rethrown. */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (e instanceof C0Error) return e.code;
    throw e;
  }
}
