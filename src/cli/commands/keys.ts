/** `c0mpute keys init|show` */
import type { Command } from 'commander';
import { out, outJson } from '../context.js';
import { passphraseFrom, warnUnencrypted } from '../passphrase.js';
import { globals } from './index.js';

export function register(program: Command): void {
  const keys = program.command('keys').description('the node identity (an Ed25519 key; DID and PeerId derive from it)');
  keys
    .command('init')
    .description('create the node key in the data directory (mode 0600; encrypted when a passphrase is given)')
    .option('--no-passphrase', 'store the key unencrypted without asking')
    .option('--force', "make a new identity even on a data directory that holds another node's data (identity.did)")
    .action(async (opts: { passphrase: boolean; force?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const [{ checkNewKeyFits, createIdentity, DID_FILE }, { peerIdFromDid }] = await Promise.all([import('../../node/identity.js'), import('../../node/peer-id.js')]);
      // before the passphrase is asked: a data directory of another node is refused without --force (DATA_DIR_HAS_IDENTITY)
      const other = checkNewKeyFits(dataDir, opts.force === true);
      const { pass, source } = opts.passphrase ? await passphraseFrom('passphrase for the new key (empty for none): ', true) : { pass: undefined, source: 'declined' as const };
      const id = createIdentity(dataDir, pass);
      out(`created ${id.did}`);
      out(`peer id  ${peerIdFromDid(id.did).toString()}`);
      out(`key file ${id.keyFile} (${pass ? 'encrypted' : 'unencrypted'})`);
      if (!pass) warnUnencrypted(id.keyFile, source);
      if (other !== undefined) {
        process.stderr.write(`warning DATA_DIR_HAS_IDENTITY: ${dataDir} holds the data of the node ${other} (${DID_FILE}); ${id.did} is another node: \`c0mpute start\` refuses it (KEY_MISMATCH) until you start once with \`c0mpute start --new-identity\`\n`);
      }
    });
  keys
    .command('show')
    .description('print the DID, PeerId and key file path (never the secret)')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const [{ isKeyEncrypted, keyFilePath, loadIdentity, readKeyFileDid }, { peerIdFromDid }] = await Promise.all([import('../../node/identity.js'), import('../../node/peer-id.js')]);
      // An unencrypted key is checked as `start` checks it (KEY_FILE_CORRUPT: a seed that is not one, a DID its seed
      // does not give); an encrypted one cannot be without its passphrase, and says so. Before (QA qaOps F4) the DID
      // written in the file was printed as is, so a backup checked with `keys show` could pass and be refused at start.
      const encrypted = isKeyEncrypted(dataDir);
      const did = encrypted ? readKeyFileDid(dataDir) : loadIdentity(dataDir).did;
      const info = { did, peerId: peerIdFromDid(did).toString(), keyFile: keyFilePath(dataDir), encrypted, verified: !encrypted };
      if (opts.json) outJson(info);
      else {
        out(`did      ${info.did}${encrypted ? '  (unverified: the key is encrypted; `start` checks it with the passphrase)' : ''}`);
        out(`peer id  ${info.peerId}`);
        out(`key file ${info.keyFile}${info.encrypted ? ' (encrypted)' : ''}`);
      }
    });
}
