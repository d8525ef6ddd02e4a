/**
 * The `c0mpute` command. Every operator-caused error prints one line,
 * `error CODE: what to fix`, with no stack trace, and exits with a documented
 * code (see EXIT in context.ts).
 */
import { Command, CommanderError } from 'commander';
import { C0Error } from '../errors.js';
import { printable } from '../util/text.js';
import { buildText } from '../util/build-id.js';
import { STORE_CORRUPT, STORE_READ_FAILED, STORE_RECOVERY, readFailedMessage } from '../util/store-damage.js';
import { EXIT, Interrupted, UsageError, defaultDataDir, errorKind, expandDataDir, nonEmpty } from './context.js';
import { registerCommands } from './commands/index.js';
import { setPassphraseFile } from './passphrase.js';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('c0mpute')
    .description('Peer-to-peer compute market node: providers quote, buyers decide, every outcome is a signed receipt.')
    // the package's version and the build id (src/util/build-id.ts): two builds of one version are told apart. Read
    // when asked for (`--version`), not at every start: commander's .version() takes the text when it registers, so
    // the option is registered here and its listener does what .version()'s does (print it, exit 0 as commander.version)
    .option('-V, --version', 'output the version number')
    // an empty one (`--data-dir "$DIR"` with DIR unset) is USAGE_EMPTY_VALUE, never the default data directory
    .option('--data-dir <dir>', 'node data directory (default: $C0MPUTE_HOME, else ~/.c0mpute)', nonEmpty('--data-dir', 'a directory', 'dataDir'))
    .option('--passphrase-file <file>', 'read the key passphrase from this file (else $C0MPUTE_PASSPHRASE, $C0MPUTE_PASSPHRASE_FILE, or a prompt on a terminal)')
    .exitOverride();
  program.on('option:version', () => {
    const text = buildText();
    program.configureOutput().writeOut!(`${text}\n`);
    throw new CommanderError(0, 'commander.version', text);
  });
  program.hook('preAction', (thisCommand, actionCommand) => {
    if (actionCommand.name() === 'help' && actionCommand.parent?.commands.includes(actionCommand)) return; // needs no data directory
    const o = thisCommand.opts<{ dataDir?: string; passphraseFile?: string }>();
    // --data-dir's `~` is C0MPUTE_HOME's (docs/config.md): before, `--data-dir '~/x'` made ./~/x in the current directory
    thisCommand.setOptionValue('dataDir', o.dataDir ? expandDataDir(o.dataDir, '--data-dir') : defaultDataDir());
    setPassphraseFile(o.passphraseFile);
  });
  registerCommands(program);
  // Every subcommand throws instead of exiting, and prints nothing of its own on
  // a usage error: report() prints it as one `error CODE: …` line like every other.
  const walk = (c: Command) => {
    c.exitOverride();
    c.configureOutput({ outputError: () => undefined });
    if (c.commands.length) addHelpCommand(c);
    c.commands.forEach(walk);
  };
  walk(program);
  return program;
}

/**
 * `help [command...]` on every command with subcommands, in place of commander's own: that one printed the root help
 * and exited 0 for a name no command has (`c0mpute help nosuch`), where `c0mpute nosuch` is USAGE_UNKNOWN_COMMAND,
 * exit 2; this one is too. It follows a path of names: `c0mpute help market export` is `market export`'s help.
 */
function addHelpCommand(c: Command): void {
  c.helpCommand(false);
  c.command('help')
    .argument('[command...]', 'the command, and its subcommand')
    .description('display help for command')
    .action((names: string[]) => {
      let target = c;
      for (const n of names) {
        const next = target.commands.find((x) => x.name() === n || x.aliases().includes(n));
        if (!next) {
          const name = printable(n.slice(0, 80), true);
          const where = `c0mpute${pathOf(target)}`;
          throw new UsageError('USAGE_UNKNOWN_COMMAND', target.commands.length ? `unknown command '${name}'; \`${where} --help\` lists the commands` : `\`${where}\` has no subcommand '${name}'`);
        }
        target = next;
      }
      target.help();
    });
}

/** ` market` for the market group, `` for the root: the command's path after `c0mpute`. */
function pathOf(c: Command): string {
  const names: string[] = [];
  for (let x: Command | null = c; x?.parent; x = x.parent) names.unshift(x.name());
  return names.map((n) => ` ${n}`).join('');
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return process.exitCode === undefined ? EXIT.OK : Number(process.exitCode);
  } catch (e) {
    return report(e);
  }
}

/**
 * A stable code for a wrong command line, from commander's own error codes:
 * `commander.unknownOption` is `USAGE_UNKNOWN_OPTION`, `commander.missingArgument`
 * `USAGE_MISSING_ARGUMENT`, and so on.
 */
export function usageCode(commanderCode: string): string {
  const name = commanderCode.replace(/^commander\./, '');
  return 'USAGE_' + name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

export function report(e: unknown): number {
  if (e instanceof CommanderError) {
    if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return EXIT.OK;
    process.stderr.write(`error ${usageCode(e.code)}: ${e.message.replace(/^error: /, '')}\n(run with --help for usage)\n`);
    return EXIT.USAGE;
  }
  const k = errorKind(e);
  if (k.kind === 'reported') return k.e.exit;
  if (k.kind === 'negative') {
    for (const l of k.e.lines) (k.e.stream === 'stderr' ? process.stderr : process.stdout).write(printable(l, true) + '\n');
    return EXIT.NEGATIVE;
  }
  if (k.kind === 'c0') {
    const c = k.e;
    // a message may quote a remote error or a record's text
    process.stderr.write(`error ${c.code}: ${printable(c.message, true)}\n`);
    if (process.env.C0MPUTE_DEBUG) process.stderr.write(`${c.stack ?? ''}\n`);
    if (c instanceof UsageError || c.code.startsWith('USAGE_')) return EXIT.USAGE;
    return c instanceof Interrupted ? (c.exit ?? EXIT.INTERRUPTED) : EXIT.OPERATOR;
  }
  if (k.kind === 'damaged') {
    // a damaged LevelDB table met by a read (or an open) outside the store's own mapping: the data directory's fault,
    // not a bug (exit 70 made a supervisor's Restart=on-failure restart it in a loop)
    const err = new C0Error(STORE_CORRUPT, `the node's database is damaged (${k.damaged}); nothing was changed: ${STORE_RECOVERY}`, { cause: e });
    return report(err);
  }
  if (k.kind === 'unreadable') {
    // a read LevelDB could not make for another reason (a table it may not open, EACCES; the disk's EIO): the
    // operator's to fix, not a bug (exit 70)
    const dir = k.failed.file?.replace(/[\\/][^\\/]*$/, '') || "the node's data directory";
    return report(new C0Error(STORE_READ_FAILED, readFailedMessage(dir, k.failed), { cause: e }));
  }
  // a bug (errorKind), the only kind left
  process.stderr.write(`internal error: ${(e as Error)?.message ?? String(e)}\n`);
  if (process.env.C0MPUTE_DEBUG) process.stderr.write(`${(e as Error)?.stack ?? ''}\n`);
  else process.stderr.write('(this is a bug; run with C0MPUTE_DEBUG=1 for the stack trace)\n');
  return EXIT.INTERNAL;
}

