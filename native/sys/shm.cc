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

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>

#include "args.h"
#include "errors.h"
#include "live_objects.h"
#include "mappings.h"
#include "registry.h"

namespace iolab {

// A whole name's limit, leading '/' included (NAME_MAX of the file under /dev/shm, plus '/').
constexpr size_t kMaxShmName = 255;

// True for a code point a terminal shows as nothing or that changes how text around it shows:
// C1 controls, invisible format characters (soft hyphen, zero-width, bidi controls, BOM), line
// and paragraph separators, private use and noncharacters. (The same classes the demos' showBytes
// escapes; its unassigned code points are left to it.)
static bool IsInvisible(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0xad || cp == 0x61c || cp == 0x180e || (cp >= 0x200b && cp <= 0x200f) ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff ||
         (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xe000 && cp <= 0xf8ff) || (cp >= 0xfdd0 && cp <= 0xfdef) ||
         (cp & 0xfffe) == 0xfffe || (cp >= 0xe0000 && cp <= 0xe007f) || cp >= 0xf0000;
}

// The length of the well-formed UTF-8 sequence of a visible character at s[i], or 0.
static size_t VisibleUtf8At(const std::string& s, size_t i) {
  unsigned char b = s[i];
  size_t length;
  uint32_t cp, min;
  if (b >= 0xc2 && b <= 0xdf) { length = 2; cp = b & 0x1f; min = 0x80; }
  else if (b >= 0xe0 && b <= 0xef) { length = 3; cp = b & 0x0f; min = 0x800; }
  else if (b >= 0xf0 && b <= 0xf4) { length = 4; cp = b & 0x07; min = 0x10000; }
  else return 0;
  if (i + length > s.size()) return 0;
  for (size_t k = 1; k < length; k++) {
    unsigned char c = s[i + k];
    if ((c & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || IsInvisible(cp)) return 0;
  return length;
}

// A name as one line of visible text, as the demos show bytes: printable text as is, `\\`,
// `\n \t \r \0`, and `\xHH` for any other byte. So a newline in a name cannot split an error
// message, and the exact bytes can be told back.
static std::string ShowName(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    unsigned char b = name[i];
    const char* named = b == '\\' ? "\\\\" : b == '\n' ? "\\n" : b == '\t' ? "\\t" : b == '\r' ? "\\r" : b == 0 ? "\\0" : nullptr;
    size_t visible = b >= 0x80 ? VisibleUtf8At(name, i) : 0;
    if (named != nullptr) {
      out += named;
      i++;
    } else if (b >= 0x20 && b < 0x7f) {
      out += char(b);
      i++;
    } else if (visible > 0) {
      out.append(name, i, visible);
      i += visible;
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[b >> 4];
      out += hex[b & 15];
      i++;
    }
  }
  return out;
}

// What is wrong with a name, or nullptr when shm_open can take it.
static const char* ShmNameProblem(const std::string& name) {
  if (name.empty() || name[0] != '/') return "must start with '/'";
  if (name.size() < 2) return "must have at least one byte after the '/'";
  if (name.find('/', 1) != std::string::npos) return "must contain no '/' after the first";
  if (name.find('\0') != std::string::npos) return "must contain no NUL byte";
  if (name == "/." || name == "/..") return "must not be '/.' or '/..' (they name the folder /dev/shm and its parent, not an object)";
  if (name.size() > kMaxShmName) return "must be at most 255 bytes long";
  return nullptr;
}

static std::string ShmNameArg(Napi::Env env, Napi::Value value) {
  std::string name = StringArg(env, value, "name");
  if (const char* problem = ShmNameProblem(name)) {
    std::string shown = name.size() > 60 ? ShowName(name.substr(0, 57)) + "..." : ShowName(name);
    ThrowTypeError(env, "ERR_INVALID_ARG_VALUE", std::string("The shm name ") + problem + ". Received '" + shown + "' (" +
                                                     std::to_string(name.size()) + (name.size() == 1 ? " byte)" : " bytes)"));
  }
  return name;
}

// fs's flag strings that suit a shared-memory object (read, or read and write: a mapping needs
// read access), as fs.openSync takes them; or the O_* bits as a number; 'r' when left out.
static int ShmFlagsArg(Napi::Env env, Napi::Value value) {
  static const Choice fs_flags[] = {{"r", O_RDONLY},
                                    {"r+", O_RDWR},
                                    {"w+", O_RDWR | O_CREAT | O_TRUNC},
                                    {"wx+", O_RDWR | O_CREAT | O_TRUNC | O_EXCL},
                                    {"xw+", O_RDWR | O_CREAT | O_TRUNC | O_EXCL},
                                    {nullptr, 0}};
  if (value.IsUndefined()) return O_RDONLY;
  if (value.IsString()) return ChoiceArg(env, value, "flags", fs_flags);
  if (!value.IsNumber()) ThrowArgType(env, "flags", "of type string or number", value);
  return int(IntegerArg(env, value, "flags", 0, INT32_MAX));
}

static Napi::Value ShmOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = ShmNameArg(env, info[0]);
  int flags = ShmFlagsArg(env, info[1]);
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
  bool writable;
};

// Our mappings by address, so munmap() recognises the buffers mmap() made (and nothing else).
// Process-wide with a mutex: the addon may be loaded in several worker threads.
static std::mutex registry_mutex;
static std::unordered_map<void*, Mapping*>* registry = new std::unordered_map<void*, Mapping*>();
// registry->size(), read without the lock: a channel send asks on every message (InMapping).
static std::atomic<size_t> registry_size{0};

// Unmaps once. Returns false when it was already unmapped.
static bool Unmap(Mapping* m) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (!m->mapped) return false;
  m->mapped = false;
  registry->erase(m->addr);
  registry_size.store(registry->size(), std::memory_order_relaxed);
  munmap(m->addr, m->length);
  LiveDec(Live::kMappings);
  return true;
}

bool AnyMapping() { return registry_size.load(std::memory_order_relaxed) > 0; }

bool InMapping(const void* view, size_t n) {
  if (!AnyMapping()) return false;
  auto from = reinterpret_cast<uintptr_t>(view);
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (const auto& [addr, m] : *registry) {
    auto at = reinterpret_cast<uintptr_t>(addr);
    if (from < at + m->length && at < from + n) return true;
  }
  return false;
}

bool InReadOnlyMapping(const void* view, size_t n) {
  auto from = reinterpret_cast<uintptr_t>(view);
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (const auto& [addr, m] : *registry) {
    auto at = reinterpret_cast<uintptr_t>(addr);
    if (!m->writable && from < at + m->length && at < from + n) return true;
  }
  return false;
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
  // A reading mapping is PROT_READ and MAP_SHARED, as a C reader makes it: the kernel, not
  // good manners, keeps this process from changing the object (a store into it is a SIGSEGV,
  // so the demos only copy out of it), it shows the object's pages themselves rather than a
  // private copy, and it works on a write-sealed memfd and an fd opened read-only.
  int prot = write ? PROT_READ | PROT_WRITE : PROT_READ;
  void* addr = mmap(nullptr, size_t(length), prot, MAP_SHARED, fd, off_t(offset));
  if (addr == MAP_FAILED) ThrowErrno(env, errno, "mmap");

  Mapping* m = new Mapping{addr, size_t(length), env, true, write};
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    (*registry)[addr] = m;
    registry_size.store(registry->size(), std::memory_order_relaxed);
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
