/**
 * How the console reads the daemon's answers (ui/lib.ts getJson, postStream). Free of the DOM: the unit tests run it.
 *
 * QA (session 49): with the daemon down every view said "ERROR: TypeError: Failed to fetch" (fetch's own words); a
 * 20,000-character market search was refused with HTTP 431, whose answer is no JSON, and the view said "SyntaxError:
 * Unexpected end of JSON input". Now a lost connection is CONNECTION_LOST, as a run's stream already said, and an
 * answer that is not JSON says the HTTP status.
 */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** What a request that lost its connection to the node (the daemon killed, the network gone) says. */
export const CONNECTION_LOST = 'CONNECTION_LOST';

/** A request that reached no node: the daemon stopped, or the network went. */
export function connectionLost(what = 'the view shows its data again once the node answers'): ApiError {
  return new ApiError(CONNECTION_LOST, `the connection to the node was lost (is the daemon running?); ${what}`, 0);
}

/** The reason phrases of the statuses a node or a proxy in front of it answers without JSON. */
const REASONS: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** What an HTTP status is called ("HTTP 431 Request Header Fields Too Large"). */
export function httpStatusText(status: number): string {
  return `HTTP ${status}${REASONS[status] ? ` ${REASONS[status]}` : ''}`;
}

/** The part of a fetch Response this reads. */
export interface Answer {
  status: number;
  ok: boolean;
  text(): Promise<string>;
}

/**
 * The JSON of an answer, or an ApiError: the daemon's own `{error: {code, message}}`; for an answer that is not JSON,
 * its HTTP status (`HTTP_431`: "the node answered HTTP 431 Request Header Fields Too Large"); a body cut off on the
 * way, CONNECTION_LOST.
 */
export async function readAnswer<T>(res: Answer): Promise<T> {
  let body: string;
  try {
    body = await res.text();
  } catch {
    throw connectionLost();
  }
  let data: T & { error?: { code?: string; message?: string } };
  try {
    data = JSON.parse(body) as typeof data;
  } catch {
    throw new ApiError(`HTTP_${res.status}`, `the node answered ${httpStatusText(res.status)}${res.ok ? ', and not with JSON' : ''}`, res.status);
  }
  if (!res.ok) throw new ApiError(data?.error?.code ?? `HTTP_${res.status}`, data?.error?.message ?? `the node answered ${httpStatusText(res.status)}`, res.status);
  return data;
}
