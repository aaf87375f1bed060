// Builds the sanitized addon (ASan + UBSan) into build-asan/, leaving build/ untouched.
import { stagedBuild } from './staged-build.mjs';

stagedBuild('build-asan', ['--asan=1'], 'the sanitized build');
