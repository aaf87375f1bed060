#!/usr/bin/env node
// The iolab command: src/program.ts registers the commands and prints errors.
import { runIolab } from './program.js';

await runIolab(process.argv);
