// The argument checks moved to args.h; this header stays only for files that still include it
// by its old name (bench_binding.cc), until they include args.h.
#pragma once
#include "args.h"
