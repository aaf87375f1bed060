// Copies to and from views that may fault (copy.h). Why the kernel and not the addon knowing
// its own mappings: the mappings are shm.cc's, and the kernel's answer covers every way a page
// can fault (read-only, past the file's end, unmapped), as the sync readv's EFAULT does.
#include "copy.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

#include "sys/mappings.h"

namespace iolab {

// False once the kernel refused the call itself (a seccomp profile without it): then a plain
// copy, the risk this file exists for coming back only there.
static std::atomic<bool> kernel_copies{true};

// Only a view of iolab's mmap can fault, so only while one exists does a copy go through the
// kernel: not for the Live::kMappings a channel's region adds (sealed, it cannot shrink), or
// every Ring read of a process with a channel would cost two syscalls more.
static bool MayFault() { return AnyMapping() && kernel_copies.load(std::memory_order_relaxed); }

// process_vm_{readv,writev} with this process on both sides: remote is the view.
static int KernelCopy(void* local, void* remote, size_t n, bool to_view) {
  struct iovec l = {local, n}, r = {remote, n};
  ssize_t done = to_view ? process_vm_writev(getpid(), &l, 1, &r, 1, 0) : process_vm_readv(getpid(), &l, 1, &r, 1, 0);
  if (done == ssize_t(n)) return 0;
  if (done < 0 && (errno == ENOSYS || errno == EPERM)) {
    kernel_copies.store(false, std::memory_order_relaxed);
    return -1;  // the caller copies itself
  }
  return EFAULT;
}

int CopyToView(void* view, const void* from, size_t n) {
  if (n == 0) return 0;
  if (MayFault()) {
    int err = KernelCopy(const_cast<void*>(from), view, n, true);
    if (err >= 0) return err;
  }
  memcpy(view, from, n);
  return 0;
}

int ReadOnlyView(const void* view, size_t n) {
  return n > 0 && MayFault() && InReadOnlyMapping(view, n) ? EFAULT : 0;
}

int CopyFromView(void* to, const void* view, size_t n) {
  if (n == 0) return 0;
  if (MayFault()) {
    int err = KernelCopy(to, const_cast<void*>(view), n, false);
    if (err >= 0) return err;
  }
  memcpy(to, view, n);
  return 0;
}

}  // namespace iolab
