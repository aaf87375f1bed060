// Copies between an op's own memory and a JS view, for views that may fault: a view of a
// read-only mapping (iolab's mmap of a sealed memfd), or of a mapping past the end of its file.
// Both come only from iolab's own mmap (native/sys/shm.cc's registry; a channel's sealed region
// is none of them): while none is mapped, the copy is a plain memcpy; while one is, the kernel makes it
// (process_vm_readv/writev on this process), and answers EFAULT where memcpy would crash.
#pragma once
#include <stddef.h>

namespace iolab {

// Each returns 0, or EFAULT when the view's memory cannot be written (read) as a whole; what
// could be copied may have been.
int CopyToView(void* view, const void* from, size_t n);
int CopyFromView(void* to, const void* view, size_t n);
// EFAULT when a read's view lies in a read-only mapping, checked when the op is filled: a read
// that found out only when it copied out would have taken the bytes from a socket or moved the
// file position, which the sync call's EFAULT never does (io_op.h's OpReadOnlyRefusal lets
// only reads at a position go on). 0 otherwise.
int ReadOnlyView(const void* view, size_t n);

}  // namespace iolab
