/**
 * The list of config keys, read from the zod schema itself (for docs/config.md
 * and the test that keeps it complete). A key is a dotted path; `<name>` stands
 * for a key of a record (e.g. `provider.workloads.<name>.price`), `[]` for an
 * element of a list of objects (e.g. `overlays[].roles`).
 */
import type { z } from 'zod';
import { configSchema } from './config.js';

export interface ConfigKey {
  path: string;
  /** the zod type at that key, unwrapped from optional/default */
  type: string;
  /** the built-in default, when the schema gives one */
  default?: unknown;
  optional: boolean;
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  defaultValue?: unknown;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  in?: z.ZodType;
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

function walk(s: z.ZodType, path: string, out: ConfigKey[], optional = false, dflt?: { v: unknown }): void {
  const d = defOf(s);
  if (d.type === 'optional' || d.type === 'nullable') return walk(d.innerType!, path, out, true, dflt);
  if (d.type === 'default') {
    const v = typeof d.defaultValue === 'function' ? (d.defaultValue as () => unknown)() : d.defaultValue;
    return walk(d.innerType!, path, out, true, { v });
  }
  if (d.type === 'pipe') return walk(d.in!, path, out, optional, dflt);
  if (path) out.push({ path, type: d.type, optional, ...(dflt ? { default: dflt.v } : {}) });
  const at = (k: string) => (path ? `${path}.${k}` : k);
  if (d.type === 'object') for (const [k, v] of Object.entries(d.shape!)) walk(v, at(k), out);
  else if (d.type === 'array') walkFields(d.element!, `${path}[]`, out);
  else if (d.type === 'record') walkFields(d.valueType!, `${path}.<name>`, out);
  else if (d.type === 'union') for (const o of d.options!) walkFields(o, path, out);
}

/** The fields of a list element, record value or union member, when it is an object (the container is listed already). */
function walkFields(s: z.ZodType, path: string, out: ConfigKey[]): void {
  const d = defOf(s);
  if (d.type === 'object') for (const [k, v] of Object.entries(d.shape!)) walk(v, `${path}.${k}`, out);
}

/** How docs/config.md writes a key's default: the JSON of it, `required`, or `—` (none). */
export function renderDefault(k: ConfigKey): string {
  if ('default' in k) return `\`${JSON.stringify(k.default)}\``;
  return k.optional ? '—' : 'required';
}

/** Every key of the node config, in schema order, each path once (union members merged). */
export function configKeys(schema: z.ZodType = configSchema): ConfigKey[] {
  const out: ConfigKey[] = [];
  walk(schema, '', out);
  const seen = new Set<string>();
  return out.filter((k) => (seen.has(k.path) ? false : (seen.add(k.path), true)));
}
