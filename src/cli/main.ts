#!/usr/bin/env node
/** Entry point of the `c0mpute` command (bin/c0mpute.js). */
import '../polyfill.js';
import { main } from './program.js';
import { quietOnClosedPipe } from './pipe.js';

quietOnClosedPipe();
process.exitCode = await main(process.argv);
