#!/usr/bin/env node
// The checkout's iolab: runs the TypeScript sources through tsx's loader, as `npx tsx src/cli.ts`
// does. The package's command is the compiled dist/cli.js (package.json's bin).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
