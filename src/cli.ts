#!/usr/bin/env node
// The iolab command: src/program.ts registers the commands and prints errors.
import { runIolab } from './program.js';
import { endQuietlyOnClosedStdout } from './interrupt.js';

// A child that must end with the process that started it (iolab trace's traced command, a
// benchmark's servers: src/parent-death.ts) asks for that first, before its command loads.
if (process.env.IOLAB_PARENT_PID !== undefined) (await import('./parent-death.js')).dieWithParentIfAsked();
endQuietlyOnClosedStdout();
await runIolab(process.argv);
