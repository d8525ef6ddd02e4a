#!/usr/bin/env node
/** Entry point of the `c0mpute` command (bin/c0mpute.js). */
import '../polyfill.js';
import { main } from './program.js';
import { quietOnClosedPipe } from './pipe.js';
import { cryptoReady } from '../records/ed25519.js';

quietOnClosedPipe();
await cryptoReady(); // the fast strict key check (libsodium WASM) is loaded before any record is read
process.exitCode = await main(process.argv);
