/** `c0mpute ledger verify|export|show|import` */
import { statSync } from 'node:fs';
import type { Command } from 'commander';
import { C0Error } from '../../errors.js';
import { selfAttestedTail } from '../../util/attestation-text.js';
import type { LedgerEntry } from '../../ledger/entry.js';
import type { RawLedger } from '../../ledger/store.js';
import type { ReplayResult } from '../../ledger/replay.js';
import type { VerifyReport } from '../../ledger/verify.js';
import type { HeldAgainst } from '../../roles/steward-held.js';
import { NegativeAnswer, out, outJson, UsageError, writingTo } from '../context.js';

export function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    throw new C0Error('INPUT_UNREADABLE', `${p}: no such file or directory`);
  }
}

/** A ledger directory (LevelDB, loaded only then) or an exported file. */
export async function readAny(p: string): Promise<RawLedger> {
  return isDir(p) ? readDir(p) : (await import('../../ledger/file.js')).readLedgerFile(p);
}

/**
 * A ledger directory, read (`verify`, `show`, `export`). A running steward's own ledger (`<data-dir>/steward/<overlay>/ledger`,
 * held by the daemon of that data directory) is STORE_LOCKED, as before, and the message then says how such a ledger
 * is read: fetched from the daemon (`ledger fetch`, which reads its own store without a dial) into a file, then that
 * file verified (QA qaUp F6: the refusal named the holder only).
 */
async function readDir(dir: string): Promise<RawLedger> {
  try {
    return await (await import('../../ledger/store.js')).readLedgerDir(dir);
  } catch (e) {
    if (!(e instanceof C0Error) || e.code !== 'STORE_LOCKED') throw e;
    const how = await daemonLedgerPointer(dir, (e.detail as { holder?: { pid?: number } } | undefined)?.holder?.pid);
    if (!how) throw e;
    throw new C0Error(e.code, `${e.message}. ${how}`, { ...(e.field ? { field: e.field } : {}), ...(e.detail ? { detail: e.detail } : {}), cause: e });
  }
}

/**
 * How to read the ledger at `dir` when the daemon of its data directory holds it (pid `holder`): undefined when `dir`
 * is not `<data-dir>/steward/<overlay>/ledger` of a running daemon with that pid.
 */
async function daemonLedgerPointer(dir: string, holder: number | undefined): Promise<string | undefined> {
  const { basename, dirname, resolve } = await import('node:path');
  const abs = resolve(dir);
  const overlay = basename(dirname(abs));
  const dataDir = dirname(dirname(dirname(abs)));
  if (basename(abs) !== 'ledger' || basename(dirname(dirname(abs))) !== 'steward') return undefined;
  const [{ readDaemonInfo }, { readRecordedDid }] = await Promise.all([import('../../node/daemon-info.js'), import('../../node/identity.js')]);
  let info: { pid: number } | undefined;
  let did: string | undefined;
  try {
    info = readDaemonInfo(dataDir);
    did = readRecordedDid(dataDir);
  } catch {
    return undefined; // only a pointer: the refusal stands as it is
  }
  if (!info || (holder !== undefined && info.pid !== holder)) return undefined;
  const q = (v: string) => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replaceAll("'", "'\\''")}'`);
  return `It is the ledger of the steward running on ${dataDir} (pid ${info.pid}): read it through that daemon, \`c0mpute --data-dir ${q(dataDir)} ledger fetch ${did ?? '<steward-did>'} FILE --overlay ${q(overlay)}\`, then \`c0mpute ledger verify FILE\` (or \`ledger show FILE\`)`;
}

let isDid: ((v: string) => boolean) | undefined;

/**
 * What the `--witness` and `--steward` parsers need, loaded before a subcommand that has either option parses its
 * command line (the parser is synchronous; the DID code is not loaded for every command). A command group with such
 * subcommands calls this from its `preSubcommand` hook.
 */
export async function loadWitnessCheck(_group: Command, sub: Command): Promise<void> {
  if (isDid || !sub.options.some((o) => o.long === '--witness' || o.long === '--steward')) return;
  ({ isDid } = await import('../../records/did.js'));
}

function didCheck(option: string): (v: string) => boolean {
  if (!isDid) throw new Error(`${option}: the DID check is not loaded (the group lacks the loadWitnessCheck hook)`);
  return isDid;
}

/** `--witness <did>`, repeatable: the witnesses whose receipts count (src/ledger/attest.ts); none given: every key's. */
export function collectWitness(v: string, prev: string[]): string[] {
  if (!didCheck('--witness')(v)) throw new UsageError('LEDGER_BAD_WITNESS', `--witness: expected a did:key, got ${v}`, { field: 'witness' });
  return [...prev, v];
}

export const WITNESS_HELP = 'a witness whose receipts count (repeat for several); without it every key’s receipt counts';

/**
 * `--steward <did>`: the steward the ledger must belong to. Not a DID is a wrong command line (LEDGER_BAD_STEWARD, exit 2), never
 * a verdict on the ledger: replay would report it as sealed by another key (LEDGER_WRONG_STEWARD, authenticity).
 */
export function parseSteward(v: string): string {
  if (!didCheck('--steward')(v)) throw new UsageError('LEDGER_BAD_STEWARD', `--steward: expected a did:key, got ${v}`, { field: 'steward' });
  return v;
}
/** verifyLedger's options from --steward and --witness. */
export function verifyOptions(o: { steward?: string; witness?: string[] }): { steward?: string; witnesses?: string[] } {
  return { ...(o.steward !== undefined ? { steward: o.steward } : {}), ...(o.witness?.length ? { witnesses: o.witness } : {}) };
}

function when(at: number): string {
  return at <= 8.64e15 ? new Date(at).toISOString() : `at=${at}`;
}

function describe(e: LedgerEntry): string {
  if (e.event === 'Admitted') {
    return `Admitted claim=${e.claim} entitlement=${e.entitlement} class=${e.class ?? '-'} reserved=${e.reserved!.uj}µJ/${e.reserved!.grade} devices=${e.devices} borrowed=${e.borrowed_uj}µJ`;
  }
  return `Released claim=${e.claim} actual=${e.actual!.uj}µJ/${e.actual!.grade}`;
}

/**
 * What the node holding the ledger directory `dir` (`<data-dir>/steward/<overlay>/ledger`) keeps against it: the
 * equivocation evidence and contradicting witness receipts `steward status` warns of (src/roles/steward-held.ts).
 * Undefined for any other directory. The steward is entry 0's signer, or for an empty ledger the node's own key.
 */
async function heldAgainst(dir: string, r: ReplayResult, witnesses?: readonly string[], only?: readonly string[]): Promise<HeldAgainst | undefined> {
  const { heldAgainstLedger, stewardLedgerPlace } = await import('../../roles/steward-held.js');
  const place = stewardLedgerPlace(dir);
  if (!place) return undefined;
  let steward = r.steward;
  if (steward === undefined) {
    try {
      steward = (await import('../../node/identity.js')).readRecordedDid(place.dataDir);
    } catch {
      // a damaged did file: no key to look for (the ledger is empty)
    }
  }
  return steward === undefined ? undefined : heldAgainstLedger(dir, steward, { length: r.length, addresses: r.addresses }, { ...(witnesses ? { witnesses } : {}), ...(only?.length ? { only } : {}) });
}

/** A report that verified, made negative by what the node's store holds against the ledger: evidence first. */
function withHeld(rep: VerifyReport, held: HeldAgainst): VerifyReport {
  if (held.store !== 'read') return rep;
  const e = held.evidence;
  if (e.length) {
    const witnesses = new Set(e.flatMap((p) => p.witnesses)).size;
    const message = `this node's store (${held.path}) holds proof that steward ${held.steward} signed two entries no single history holds: ${e.length} pair${e.length === 1 ? '' : 's'} (seq ${e.map((p) => p.seq).join(', ')}) from ${witnesses} witness${witnesses === 1 ? '' : 'es'}; this ledger and its attestation are not to be trusted (c0mpute steward status)`;
    return { ...rep, ok: false, problem: { code: 'LEDGER_EQUIVOCATION_EVIDENCE', message } };
  }
  const c = held.contradicting[0];
  if (c) {
    const what = c.code === 'WITNESS_LENGTH_BEYOND' ? `holds length ${c.length}, this ledger has ${rep.replay.length} (restored from an old copy, or truncated?)` : `cosigned another head at length ${c.length} (rewritten?)`;
    return { ...rep, ok: false, problem: { code: c.code, message: `witness ${c.witness} ${what}: its receipt is kept in this node's store (${held.path}${held.contradicting.length > 1 ? `; ${held.contradicting.length} witnesses in all` : ''}; c0mpute steward status)` } };
  }
  return rep;
}

/**
 * The report of a ledger directory made negative by what its node's store holds against it (heldAgainst, withHeld),
 * for every command that reads a steward's ledger directory where it lives: `verify`, `show` and `export` give the same
 * answer on it (QA ffLedger F4: `show` exited 0 and `export` wrote a file that verifies while `verify` exited 1 on a
 * ledger its node held equivocation evidence against), and `pool check --ledger` refuses it as `verify` fails it. `held` is undefined for a file, any other directory, and a
 * report already negative.
 */
export async function withNodeStore(path: string, dir: boolean, rep: VerifyReport, witnesses?: readonly string[]): Promise<{ rep: VerifyReport; held?: HeldAgainst }> {
  // the receipts the node heard count from the witnesses named (--witness), else from the keys this ledger holds a
  // valid receipt from: as `steward status` warns of them (any key can sign a receipt of any length)
  const counted = witnesses?.length ? witnesses : rep.attestation.witnesses.map((w) => w.witness);
  const held = dir && rep.ok ? await heldAgainst(path, rep.replay, counted, witnesses) : undefined;
  return held ? { rep: withHeld(rep, held), held } : { rep };
}

export function heldLine(held: HeldAgainst): string {
  if (held.store === 'unreadable') return `${held.path} not read (${held.code}: ${held.message}): evidence the node may hold against this steward is not checked`;
  if (held.store === 'locked') return `${held.path} not read (STORE_LOCKED: held by ${held.holder ? `pid ${held.holder.pid}` : 'another process'}): evidence the node may hold against this steward is not checked; stop that process, or see c0mpute steward status`;
  const parts = [
    held.evidence.length ? `equivocation evidence: ${held.evidence.length} pair${held.evidence.length === 1 ? '' : 's'}` : 'no equivocation evidence',
    held.contradicting.length ? `${held.contradicting.length} contradicting witness receipt${held.contradicting.length === 1 ? '' : 's'}` : 'no contradicting witness receipt',
  ];
  return `${held.path} read: ${parts.join(', ')}`;
}

export function register(program: Command): void {
  const led = program.command('ledger').description('the pool/1 steward ledger: verify, export, show, import, fetch');
  led.hook('preSubcommand', loadWitnessCheck);

  led
    .command('verify')
    .argument('<path>', 'a ledger directory (LevelDB) or an exported ledger file')
    .option('--steward <did>', 'the steward the ledger must belong to (default: the signer of entry 0)', parseSteward)
    .option('--witness <did>', WITNESS_HELP, collectWitness, [])
    .option('--json', 'machine-readable output')
    .description('replay and verify every entry; print length, head, attestation grade and the first problem (exit 0 ok, 1 not)')
    .action(async (path: string, opts: { steward?: string; witness: string[]; json?: boolean }) => {
      const { verifyLedger } = await import('../../ledger/verify.js');
      const dir = isDir(path);
      const raw = await readAny(path);
      // a steward's ledger directory in its data directory: what that node's store holds against it
      const { rep, held } = await withNodeStore(path, dir, verifyLedger(raw, verifyOptions(opts)), opts.witness);
      const r = rep.replay;
      const a = rep.attestation;
      const grade =
        a.grade === 'witnessed'
          ? `witnessed by ${a.witnesses.map((w) => `${w.witness} up to length ${w.length}`).join(', ')}${selfAttestedTail(r.length, a.witnessedLength)}`
          : 'self-attested';
      if (opts.json) {
        outJson({ ok: rep.ok, length: r.length, head: r.ok ? r.head : null, steward: r.steward ?? null, attestation: a, problem: rep.problem ?? null, ...(held ? { nodeStore: held } : {}) });
      } else {
        // the steward first: without --steward it is only entry 0's signer, which anyone re-signing the ledger controls
        const lines = [
          `steward      ${r.steward ?? '(none)'}${opts.steward === undefined ? (r.steward ? " (entry 0's signer: not checked; pass --steward DID to require one)" : '') : r.length === 0 ? ' (named by --steward; the ledger has no entry to show whose it is)' : ' (as required by --steward)'}`,
          `length       ${r.length}`,
          `head         ${r.ok ? r.head : '(not established)'}`,
          `attestation  ${rep.ok || r.ok ? grade : '(not graded: the chain does not verify)'}`,
        ];
        for (const s of a.receipts) {
          if (s.status === 'invalid') lines.push(`receipt      does not verify: ${s.code}${s.witness ? ` (from ${s.witness})` : ''}`);
          else if (s.status === 'refused') lines.push(`receipt      refused: ${s.code} (the witness key is the steward's)`);
          else if (s.status === 'mismatch') lines.push(`receipt      verifies but covers a different head: ${s.code} (${s.witness}, length ${s.length})`);
          else if (s.status === 'other-ledger') lines.push(`receipt      for another steward (${s.steward})`);
          else if (s.status === 'not-named') lines.push(`receipt      not counted: ${s.witness ?? 'an unreadable signer'} is not a named witness (--witness)`);
        }
        if (held) lines.push(`node store   ${heldLine(held)}`);
        const p = rep.problem;
        lines.push(`problem      ${p ? `${p.index !== undefined ? `entry ${p.index}: ` : ''}${p.code}: ${p.message}` : 'none'}`);
        if (!rep.ok) throw new NegativeAnswer(lines);
        for (const l of lines) out(l);
      }
      if (!rep.ok) process.exitCode = 1;
    });

  led
    .command('export')
    .argument('<dir>', 'ledger directory')
    .argument('<file>', 'file to write')
    .option('--unverified', 'write a ledger that does not verify anyway (a rescue copy): the file keeps the stored head, so it fails verify as the directory does')
    .description('verify the ledger, then write it (entries, witness receipts and the stored head) to one file; one that does not verify is refused')
    .action(async (dir: string, file: string, opts: { unverified?: boolean }) => {
      const [{ writeLedgerFile }, { assertVerified, verifyLedger }] = await Promise.all([import('../../ledger/file.js'), import('../../ledger/verify.js')]);
      const raw = await readDir(dir);
      // A directory that does not verify is refused as import refuses such a file (exit 3, the same codes): exported
      // without a word, its stored head (the only proof of an acknowledged entry lost) was dropped from the file,
      // which then verified and imported clean (QA witness pass, finding 1). A steward's ledger directory where it
      // lives is refused as `verify` fails it on what its node's store holds (withNodeStore): the file carries
      // neither that evidence nor those receipts, so it would verify clean (QA ffLedger F4).
      const own = verifyLedger(raw);
      const { rep, held } = await withNodeStore(dir, true, own);
      if (!opts.unverified) assertVerified(rep, `refusing to export ${dir} (--unverified writes it anyway, with its stored head)`);
      writingTo(file, () => writeLedgerFile(file, raw));
      out(`exported ${raw.entries.length} entries and ${raw.receipts.length} receipts to ${file}`);
      // the node's store not read (held by a running daemon, or damaged): said, as verify says it (review s54)
      if (held && held.store !== 'read') out(`warning: node store ${heldLine(held)}`);
      if (!rep.ok) {
        const p = rep.problem!;
        out(`warning: the ledger does not verify: ${p.index !== undefined ? `entry ${p.index}: ` : ''}${p.code}: ${p.message}`);
        if (own.ok && held) {
          out(`warning: the problem is what this node's store (${held.path}) holds against the ledger, which the file does not carry: ledger verify ${file} does not see it`);
        } else out(`warning: the file keeps the directory's stored head and receipts as they are: ledger verify ${file} reports the same problem, and ledger import refuses it${rep.replay.ok && p.code === 'LEDGER_HEAD_MISMATCH' ? ' unless --rebuild-head' : ''}`);
      }
    });

  led
    .command('import')
    .argument('<file>', 'exported ledger file')
    .argument('<dir>', 'a new or empty directory for the ledger')
    .option('--witness <did>', WITNESS_HELP, collectWitness, [])
    .option('--rebuild-head', 'take a file whose stored head does not match its entries, or cannot be read, and write a head rebuilt from the entries (they and the receipts must verify)')
    .description('verify an exported ledger and write it into a new or empty directory (anything else is refused)')
    .action(async (file: string, dir: string, opts: { witness: string[]; rebuildHead?: boolean }) => {
      const [{ readLedgerFile }, { assertVerified, verifyLedger }, { assertImportTarget, writeLedgerDir }] = await Promise.all([import('../../ledger/file.js'), import('../../ledger/verify.js'), import('../../ledger/store.js')]);
      // a target in use is refused before the file is read and verified (which may take long), not after
      assertImportTarget(dir);
      const raw = readLedgerFile(file);
      // the file's own witness receipts (of the named witnesses, if any) must not contradict it (a rewritten or re-signed history)
      const rep = verifyLedger(raw, verifyOptions(opts));
      // --rebuild-head: only the stored head is set aside; the chain and the receipts are checked as always
      const headOnly = opts.rebuildHead && !rep.ok && rep.replay.ok && rep.problem?.code === 'LEDGER_HEAD_MISMATCH';
      const entries = { entries: raw.entries, receipts: raw.receipts };
      const checked = headOnly ? verifyLedger(entries, verifyOptions(opts)) : rep;
      assertVerified(checked, `refusing to import ${file}${rep.problem?.code === 'LEDGER_HEAD_MISMATCH' && !opts.rebuildHead && rep.replay.ok ? ' (--rebuild-head writes a head rebuilt from its entries)' : ''}`);
      // With --witness, what was checked is what is written: a receipt of a key not named was not counted, and kept it
      // made a directory that `ledger verify` (every key's receipt counting) and `ledger export` refuse when it
      // contradicts the ledger (QA ffLedger F5). The file keeps them.
      const receipts = opts.witness.length ? raw.receipts.filter((_, i) => checked.attestation.receipts[i]?.status !== 'not-named') : raw.receipts;
      const r = await writeLedgerDir(dir, { entries: raw.entries, receipts });
      out(`imported ${r.length} entries, head ${r.head}`);
      if (receipts.length < raw.receipts.length) out(`left out ${raw.receipts.length - receipts.length} witness receipt(s) of keys not named by --witness (the file still holds them)`);
      if (headOnly) out(`the file's stored head was set aside (${rep.problem!.message}): the new directory's head is rebuilt from the entries`);
    });

  led
    .command('show')
    .argument('<path>', 'ledger directory or exported file')
    .option('--from <n>', 'first seq to show', '0')
    .option('--witness <did>', WITNESS_HELP, collectWitness, [])
    .option('--json', 'machine-readable output')
    .description('print entries in readable form (verified first)')
    .action(async (path: string, opts: { from: string; witness: string[]; json?: boolean }) => {
      // digits only: `0x10`, `1e2` or ` 3` read by Number() would list from another seq than the one written
      const from = Number(opts.from);
      if (!/^[0-9]{1,16}$/.test(opts.from) || !Number.isSafeInteger(from)) throw new UsageError('LEDGER_BAD_RANGE', `--from: expected a non-negative integer, got ${opts.from}`, { field: 'from' });
      const [{ verifyLedger }, { open }, { POOL_TYPE }] = await Promise.all([import('../../ledger/verify.js'), import('../../records/envelope.js'), import('../../ledger/entry.js')]);
      const dir = isDir(path);
      const raw = await readAny(path);
      const { rep, held } = await withNodeStore(path, dir, verifyLedger(raw, verifyOptions(opts)), opts.witness);
      const rows = raw.entries.slice(from).map((b, i) => {
        const seq = from + i;
        try {
          const o = open(b, POOL_TYPE);
          return { seq, address: o.address, entry: o.record as LedgerEntry };
        } catch (e) {
          if (!(e instanceof C0Error)) throw e;
          return { seq, error: `${e.code}: ${e.message}` };
        }
      });
      // a ledger that does not verify is still shown (to find the bad entry), but the answer is negative: exit 1
      if (!rep.ok) process.exitCode = 1;
      if (opts.json) {
        outJson({ ok: rep.ok, problem: rep.problem ?? null, length: raw.entries.length, entries: rows, ...(held ? { nodeStore: held } : {}) });
        return;
      }
      // nothing to list is said, not left as an empty answer that reads like a ledger with no entries (QA witness pass, finding 10)
      if (!rows.length) out(`no entries from ${from} (length ${raw.entries.length}${raw.entries.length ? `: seq 0 to ${raw.entries.length - 1}` : ''})`);
      for (const row of rows) {
        if ('error' in row) out(`#${row.seq} (refused) ${row.error}`);
        else out(`#${row.seq} ${when(row.entry.at)} ${describe(row.entry)} ${row.address}`);
      }
      const p = rep.problem;
      if (p) out(`problem: ${p.index !== undefined ? `entry ${p.index}: ` : ''}${p.code}: ${p.message}`);
    });
}
