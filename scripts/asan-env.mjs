// The environment that runs node against the sanitized addon: gcc's ASan runtime preloaded
// (node itself is not instrumented), leaks off (V8 is not instrumented either), every report
// fatal, UBSan halting with a stack trace. Children spawned by tests inherit all of it.
import { execFileSync } from 'node:child_process';

export function asanEnv(base = process.env) {
  const libasan = execFileSync('gcc', ['-print-file-name=libasan.so'], { encoding: 'utf8' }).trim();
  return {
    ...base,
    IOLAB_ASAN: '1',
    LD_PRELOAD: libasan,
    ASAN_OPTIONS: 'detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=86:allow_user_segv_handler=1',
    UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1:exitcode=87',
  };
}
