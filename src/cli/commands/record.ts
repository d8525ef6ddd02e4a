/** `c0mpute record inspect|verify|sign` */
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { SCHEMAS } from '../../records/kinds.js';
import { EVIDENCE_TYPE, POOL_TYPE, WITNESS_TYPE } from '../../ledger/kind-names.js';
import { NegativeAnswer, jsonReplacer, nonEmpty, out, outJson, readInput, writeOutput } from '../context.js';
import { globals } from './index.js';

/**
 * The content types the CLI knows (knownTypes() once ../record-kinds.ts has loaded: the envelope's SCHEMAS and the
 * ledger's three), named without loading the envelope code for every command's help. A unit test holds them equal.
 */
export function typeNames(): string[] {
  return [...Object.keys(SCHEMAS), POOL_TYPE, WITNESS_TYPE, EVIDENCE_TYPE].sort();
}

export function register(program: Command): void {
  const rec = program.command('record').description('signed records: inspect, verify, sign');

  rec
    .command('inspect')
    .argument('<file>', 'envelope file, or - for standard input')
    .description('decode an envelope: content type, signer, address, validity and fields')
    .option('--json', 'machine-readable output')
    .action(async (file: string, opts: { json?: boolean }) => {
      const { inspect } = await import('../record-kinds.js');
      const bytes = readInput(file);
      const r = inspect(bytes);
      const valid = r.error === undefined;
      if (opts.json) {
        outJson({ type: r.type ?? null, signer: r.signer ?? null, address: r.address, valid, error: r.error ? { code: r.error.code, message: r.error.message } : null, fields: r.fields ?? null });
        return;
      }
      out(`type     ${r.type ?? '(unreadable)'}`);
      out(`signer   ${r.signer ?? '(unreadable)'}`);
      out(`address  ${r.address}`);
      out(`valid    ${valid ? 'yes' : `no — ${r.error!.code}: ${r.error!.message}`}`);
      if (r.fields !== undefined) out(`fields   ${JSON.stringify(r.fields, jsonReplacer, 2).replace(/\n/g, '\n         ')}`);
    });

  rec
    .command('verify')
    .argument('<file>', 'envelope file, or - for standard input')
    .description('exit 0 when the record is valid, 1 with the error code when not')
    // blank (`--type "$T"`, T unset) names no type: USAGE_EMPTY_VALUE, never a check of any type
    .option('--type <type>', `expected content type (${typeNames().join(', ')})`, nonEmpty('--type', 'a content type'))
    .action(async (file: string, opts: { type?: string }) => {
      const { kindOf, open, openAny } = await import('../record-kinds.js');
      // A type no kind has is the command line's fault, found before the record is read: open() reported it as the
      // record's (RECORD_WRONG_TYPE, exit 1, "invalid"), and a script concluded a valid record was bad. RECORD_UNKNOWN_TYPE,
      // exit 3, as `record sign --type` gives.
      if (opts.type !== undefined) kindOf(opts.type);
      const bytes = readInput(file);
      try {
        const r = opts.type !== undefined ? open(bytes, opts.type) : openAny(bytes);
        out(`valid ${r.type} signed by ${r.signer} ${r.address}`);
      } catch (e) {
        if (!(e instanceof C0Error)) throw e;
        throw new NegativeAnswer([`invalid ${e.code}: ${e.message}`]);
      }
    });

  rec
    .command('sign')
    // blank names no type, as for verify: USAGE_EMPTY_VALUE (exit 2), not RECORD_UNKNOWN_TYPE
    .requiredOption('--type <type>', `content type of the record (${typeNames().join(', ')})`, nonEmpty('--type', 'a content type'))
    .argument('<fields>', 'JSON file with the record fields (bytes as hex), or -')
    .option('-o, --out <file>', 'write the envelope here (default: standard output)', nonEmpty('--out', 'a file'))
    .description('seal a record from JSON fields with the node key')
    .action(async (fieldsFile: string, opts: { type: string; out?: string }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const [{ kindOf, seal }, { recordFromJson }, { loadNodeIdentity }] = await Promise.all([import('../record-kinds.js'), import('../../records/schema.js'), import('../signer.js')]);
      const kind = kindOf(opts.type);
      let json: unknown;
      try {
        json = JSON.parse(Buffer.from(readInput(fieldsFile)).toString('utf8'));
      } catch (e) {
        if (e instanceof C0Error) throw e;
        throw new C0Error('INPUT_NOT_JSON', `${fieldsFile} is not valid JSON: ${(e as Error).message}`);
      }
      const record = recordFromJson(kind.schema, json);
      const id = await loadNodeIdentity(dataDir);
      const env = seal(opts.type, record as never, id.signer);
      if (opts.out) {
        writeOutput(opts.out, env.bytes);
        process.stderr.write(`${env.address}\n`);
      } else if (process.stdout.isTTY) {
        throw new C0Error('OUTPUT_IS_TERMINAL', 'refusing to write binary to a terminal; use --out FILE or redirect standard output');
      } else {
        process.stdout.write(env.bytes);
      }
    });
}
