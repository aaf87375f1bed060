// POSIX shared memory: shm_open/shm_unlink/ftruncate, and mmap(2) of a shared object as an
// external ArrayBuffer. A small heap record per mapping tracks whether it is still mapped:
// munmap(buffer) detaches the ArrayBuffer first (later use is a TypeError, never a fault) and
// unmaps once; the GC finalizer unmaps only what was not unmapped explicitly. A mapping never
// reaches past the object's end (touching such pages would SIGBUS).
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "args.h"
#include "errors.h"
#include "live_objects.h"
#include "registry.h"

namespace iolab {

// The limit the issue sets for a whole name, leading '/' included.
constexpr size_t kMaxShmName = 255;

static std::string ShmNameArg(Napi::Env env, Napi::Value value) {
  std::string name = StringArg(env, value, "name");
  bool valid = name.size() >= 2 && name.size() <= kMaxShmName && name[0] == '/' &&
               name.find('/', 1) == std::string::npos && name.find('\0') == std::string::npos &&
               name != "/." && name != "/..";
  if (!valid) {
    ThrowTypeError(env, "ERR_INVALID_ARG_VALUE",
                   "The shm name must start with one '/', contain no other '/' and be 2 to 255 bytes long. Received '" +
                       (name.size() > 60 ? name.substr(0, 57) + "..." : name) + "' (" + std::to_string(name.size()) +
                       " bytes)");
  }
  return name;
}

static Napi::Value ShmOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = ShmNameArg(env, info[0]);
  int flags = int(IntegerArg(env, info[1], "flags", 0, INT32_MAX));
  mode_t mode = info[2].IsUndefined() ? 0600 : mode_t(IntegerArg(env, info[2], "mode", 0, 07777));
  int fd = shm_open(name.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) ThrowErrno(env, errno, "shm_open", name.c_str());
  return Napi::Number::New(env, fd);
}

static Napi::Value ShmUnlink(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = ShmNameArg(env, info[0]);
  if (shm_unlink(name.c_str()) < 0) ThrowErrno(env, errno, "shm_unlink", name.c_str());
  return env.Undefined();
}

static Napi::Value Ftruncate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  uint64_t length = SizeArg(env, info[1], "length");
  int r;
  do r = ftruncate(fd, off_t(length));
  while (r < 0 && errno == EINTR);
  if (r < 0) ThrowErrno(env, errno, "ftruncate");
  return env.Undefined();
}

// One live mapping. Freed by the ArrayBuffer's finalizer (which runs after GC, or once the
// detached buffer's backing store is released); `mapped` says whether munmap is still due.
struct Mapping {
  void* addr;
  size_t length;
  napi_env env;
  bool mapped;
};

// Our mappings by address, so munmap() recognises the buffers mmap() made (and nothing else).
// Process-wide with a mutex: the addon may be loaded in several worker threads.
static std::mutex registry_mutex;
static std::unordered_map<void*, Mapping*>* registry = new std::unordered_map<void*, Mapping*>();

// Unmaps once. Returns false when it was already unmapped.
static bool Unmap(Mapping* m) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (!m->mapped) return false;
  m->mapped = false;
  registry->erase(m->addr);
  munmap(m->addr, m->length);
  LiveDec(Live::kMappings);
  return true;
}

static void Finalize(Napi::Env, void*, Mapping* m) {
  Unmap(m);
  delete m;
}

static Napi::Value Mmap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = FdArg(env, info[0]);
  int64_t length = int64_t(SizeArg(env, info[1], "length"));
  OptionsArg options(env, info[2]);
  bool write = options.Bool("write", false);
  int64_t offset = options.Integer("offset", 0, kMaxSafeInteger, 0);
  if (length == 0) ThrowArgRange(env, "length", "> 0", "0");
  long page = sysconf(_SC_PAGESIZE);
  if (offset % page != 0) {
    ThrowArgRange(env, "options.offset", "a multiple of the page size (" + std::to_string(page) + ")",
                  std::to_string(offset));
  }
  struct stat st;
  if (fstat(fd, &st) < 0) ThrowErrno(env, errno, "fstat");
  if (offset + length > int64_t(st.st_size)) {
    ThrowRangeError(env, "ERR_OUT_OF_RANGE",
                    "The mapping [" + std::to_string(offset) + ", " + std::to_string(offset + length) +
                        ") is out of range: it must end within the object's size of " +
                        std::to_string(st.st_size) + " bytes");
  }
  // JS cannot make an ArrayBuffer read-only, and a store into a PROT_READ page would kill the
  // process. So a read-only mapping is MAP_PRIVATE and writable: it shows the object's bytes,
  // and a stray JS write stays in this process's private copy of that page (never the object).
  void* addr = write ? mmap(nullptr, size_t(length), PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
                     : mmap(nullptr, size_t(length), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, off_t(offset));
  if (addr == MAP_FAILED) ThrowErrno(env, errno, "mmap");

  Mapping* m = new Mapping{addr, size_t(length), env, true};
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    (*registry)[addr] = m;
  }
  LiveInc(Live::kMappings);
  try {
    return Napi::ArrayBuffer::New(env, addr, size_t(length), Finalize, m);
  } catch (...) {
    Unmap(m);  // the finalizer was never attached
    delete m;
    throw;
  }
}

static Napi::Value Munmap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsArrayBuffer()) ThrowArgType(env, "buffer", "an ArrayBuffer returned by mmap()", info[0]);
  Napi::ArrayBuffer buffer = info[0].As<Napi::ArrayBuffer>();
  Mapping* m = nullptr;
  if (!buffer.IsDetached()) {
    void* data = buffer.Data();
    std::lock_guard<std::mutex> lock(registry_mutex);
    auto it = registry->find(data);
    if (it != registry->end() && it->second->env == napi_env(env) && it->second->length == buffer.ByteLength()) {
      m = it->second;
    }
  }
  if (m == nullptr) {
    ThrowTypeError(env, "ERR_INVALID_ARG_VALUE",
                   buffer.IsDetached() ? "The buffer was already unmapped (it is detached)"
                                       : "The buffer is not a mapping made by mmap()");
  }
  buffer.Detach();  // first: from here on JS cannot reach the pages
  Unmap(m);
  return env.Undefined();
}

static void Init(Napi::Env env, Napi::Object exports) {
  exports.Set("shmOpen", Napi::Function::New(env, ShmOpen, "shmOpen"));
  exports.Set("shmUnlink", Napi::Function::New(env, ShmUnlink, "shmUnlink"));
  exports.Set("ftruncate", Napi::Function::New(env, Ftruncate, "ftruncate"));
  exports.Set("mmap", Napi::Function::New(env, Mmap, "mmap"));
  exports.Set("munmap", Napi::Function::New(env, Munmap, "munmap"));
}

IOLAB_FEATURE(shm, Init);

}  // namespace iolab
