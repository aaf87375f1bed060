/* The engine table: one registration line per engine. */
#include <string.h>

#include "engine.h"

extern const struct engine_ops engine_sync, engine_psync, engine_io_uring, engine_libaio,
    engine_posixaio, engine_mmap;

static const struct engine_ops *const engines[] = {
    &engine_sync, &engine_psync, &engine_io_uring, &engine_libaio, &engine_posixaio, &engine_mmap,
};

const char *const engine_names[] = {"sync", "psync", "io_uring", "libaio", "posixaio", "mmap", NULL};

const struct engine_ops *engine_find(const char *name) {
  for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++)
    if (strcmp(engines[i]->name, name) == 0) return engines[i];
  return NULL;
}
