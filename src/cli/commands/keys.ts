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
    .action(async (opts: { passphrase: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const [{ createIdentity }, { peerIdFromDid }] = await Promise.all([import('../../node/identity.js'), import('../../node/peer-id.js')]);
      const { pass, source } = opts.passphrase ? await passphraseFrom('passphrase for the new key (empty for none): ', true) : { pass: undefined, source: 'declined' as const };
      const id = createIdentity(dataDir, pass);
      out(`created ${id.did}`);
      out(`peer id  ${peerIdFromDid(id.did).toString()}`);
      out(`key file ${id.keyFile} (${pass ? 'encrypted' : 'unencrypted'})`);
      if (!pass) warnUnencrypted(id.keyFile, source);
    });
  keys
    .command('show')
    .description('print the DID, PeerId and key file path (never the secret)')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const { dataDir } = globals(cmd);
      const [{ isKeyEncrypted, keyFilePath, readKeyFileDid }, { peerIdFromDid }] = await Promise.all([import('../../node/identity.js'), import('../../node/peer-id.js')]);
      const did = readKeyFileDid(dataDir);
      const info = { did, peerId: peerIdFromDid(did).toString(), keyFile: keyFilePath(dataDir), encrypted: isKeyEncrypted(dataDir) };
      if (opts.json) outJson(info);
      else {
        out(`did      ${info.did}`);
        out(`peer id  ${info.peerId}`);
        out(`key file ${info.keyFile}${info.encrypted ? ' (encrypted)' : ''}`);
      }
    });
}
