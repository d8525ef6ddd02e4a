/**
 * The short form of a DID the console and the CLI draw (src/util/did-text.ts),
 * against review s43 R3: F1, a peer's free text that starts with `did:key:`
 * was drawn as the short form of an honest provider's DID (and its U+202E
 * reached the page raw); F4, the short form showed 6 key-dependent
 * characters (`z6MkvD…5T3Z`), a look-alike a vanity-key search away.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ed25519 } from '@noble/curves/ed25519.js';
import { didFromPublicKey, isDid } from '../../../src/records/did.js';
import { looksLikeDid, shortDid } from '../../../src/util/did-text.js';
import { short } from '../../../src/cli/short.js';

const did = (seed: number) => didFromPublicKey(ed25519.getPublicKey(new Uint8Array(32).fill(seed)));

test('every DID the project makes is one by syntax, and its short form is 8 + 4 key characters after z6Mk', () => {
  for (let seed = 1; seed < 60; seed++) {
    const d = did(seed);
    assert.ok(looksLikeDid(d) && isDid(d), d);
    const s = shortDid(d);
    assert.equal(s, `${d.slice(12, 20)}…${d.slice(-4)}`);
    assert.ok(!s.startsWith('z6Mk'), 'the constant prefix is not shown');
    assert.equal(s.replace('…', '').length, 12, 'twelve key characters (~69 bits)');
    assert.equal(short(d), s, 'the CLI shortens as the console does');
  }
});

test('text that starts with did:key: is not a DID: shown escaped, never as a short form', () => {
  const honest = did(7);
  const spoofs = [
    `${honest} and a message of the provider's own after it`,
    `did:key:\u202Ethe provider ${honest.slice(-4)} delivered`,
    `did:key:z6Mk${honest.slice(12, 20)}0OIl${'x'.repeat(40)}${honest.slice(-4)}`, // not base58
    'did:key:z6Mk',
    'did:web:example.com',
  ];
  for (const s of spoofs) {
    assert.equal(looksLikeDid(s), false, s);
    const shown = shortDid(s);
    assert.notEqual(shown, shortDid(honest), s);
    assert.ok(!/[\u202a-\u202e\u2066-\u2069]/.test(shown), `bidi controls escaped: ${shown}`);
    if (Array.from(s).length > 24) assert.ok(shown.endsWith('…') && shown.length < s.length + 6, `cut: ${shown}`);
  }
  assert.equal(shortDid('did:key:\u202Eabc'), 'did:key:\\u202eabc');
  assert.equal(looksLikeDid(undefined), false);
  assert.equal(looksLikeDid(42), false);
});
