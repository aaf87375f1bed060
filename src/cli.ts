#!/usr/bin/env node
// The iolab command: src/program.ts registers the commands and prints errors.
import { runIolab } from './program.js';
import { endQuietlyOnClosedStdout } from './interrupt.js';

endQuietlyOnClosedStdout();
await runIolab(process.argv);
