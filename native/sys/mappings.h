// What the Ring asks of iolab's own mappings (native/sys/shm.cc's mmap).
#pragma once
#include <stddef.h>

namespace iolab {

// Whether any mapping made by iolab's mmap is there (any thread's): one load, no lock. A
// channel's region is no such mapping: sealed, it cannot shrink under a view.
bool AnyMapping();
// Whether [view, view + n) overlaps any mapping made by iolab's mmap (any thread's): memory
// that may fault (its file shrank), which a plain memcpy must not touch.
bool InMapping(const void* view, size_t n);
// Whether [view, view + n) overlaps a read-only mapping made by iolab's mmap (any thread's).
bool InReadOnlyMapping(const void* view, size_t n);

}  // namespace iolab
