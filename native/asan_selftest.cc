// Proof that the sanitizer is live: compiled into the sanitized build only. asanSelfTest()
// writes one byte past a heap block; under ASan the process dies with a heap-buffer-overflow
// report. A normal build does not have the function at all.
#ifdef IOLAB_ASAN
#include <cstdlib>

#include "registry.h"

namespace iolab {

static Napi::Value AsanSelfTest(const Napi::CallbackInfo& info) {
  volatile size_t size = 16;
  char* block = static_cast<char*>(malloc(size));
  block[size] = 1;  // one past the end, on purpose
  free(block);
  return info.Env().Undefined();
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("asanSelfTest", Napi::Function::New(env, AsanSelfTest));
}

IOLAB_FEATURE(asan_selftest, Init);

}  // namespace iolab
#endif
