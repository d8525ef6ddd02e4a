/**
 * YAML as c0mpute's operator files use it (config, job, batch, run, member, tree and claim files): plain maps, lists,
 * strings, numbers, booleans and null. The `yaml` library's `parse` also resolves YAML 1.1's tags (`!!binary` to a
 * Uint8Array, `!!set` to a Set, `!!timestamp` to a Date, `!!omap`/`!!pairs` to Maps) and prints a Node warning to
 * standard error for a tag it does not know, reading the value as a string. A schema then saw a byte array as an
 * object with a hundred unknown keys (its methods), and a typo'd tag went through with a line on stderr. Here either
 * is an error naming where it is; each caller wraps it in its own file's code, as it does a syntax error.
 */
import { parseDocument } from 'yaml';

/** A value a c0mpute file does not take (a tagged one, or a tag unknown): `path` is where it is, dotted. */
export class YamlValueError extends Error {
  readonly path: string;
  constructor(path: string, message: string) {
    super(message);
    this.name = 'YamlValueError';
    this.path = path;
  }
}

/** What a non-plain value is, for the message. */
function kindOf(v: object): string {
  if (v instanceof Uint8Array) return 'bytes (!!binary)';
  if (v instanceof Set) return 'a set (!!set)';
  if (v instanceof Map) return 'an ordered map (!!omap or !!pairs)';
  if (v instanceof Date) return 'a timestamp (!!timestamp)';
  return `a ${v.constructor?.name ?? 'tagged'} value`;
}

function checkPlain(v: unknown, path: string): void {
  if (typeof v !== 'object' || v === null) return;
  if (Array.isArray(v)) {
    v.forEach((x, i) => checkPlain(x, `${path}[${i}]`));
    return;
  }
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) {
    throw new YamlValueError(path, `${path || '(top)'} is ${kindOf(v)}, which c0mpute does not take: write it as a plain string, number, list or mapping`);
  }
  for (const [k, x] of Object.entries(v)) checkPlain(x, path ? `${path}.${k}` : k);
}

/**
 * Parse an operator's YAML file. Throws the parser's error for bad syntax (duplicate keys included), a YamlValueError
 * for an unknown tag or a value that is not plain data; nothing is printed.
 */
export function parsePlainYaml(text: string): unknown {
  // logLevel 'silent': the library neither prints warnings nor throws for errors itself; both are read here
  const doc = parseDocument(text, { logLevel: 'silent', uniqueKeys: true });
  if (doc.errors.length > 0) throw doc.errors[0]!;
  const w = doc.warnings[0];
  if (w) throw new YamlValueError('', w.code === 'TAG_RESOLVE_FAILED' ? `${w.message.split('\n')[0]!.replace(/:$/, '')}: c0mpute files take no tags` : w.message.split('\n')[0]!);
  const v: unknown = doc.toJS({ maxAliasCount: 100 });
  checkPlain(v, '');
  return v;
}
