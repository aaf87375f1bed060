/* fio's cmdprio_percentage / cmdprio_class / cmdprio of the libaio and io_uring engines: that
 * percentage of a job's I/Os is issued at the class and level given (the class RT unless given),
 * the rest at the job's own priority (prioclass/prio, set on its thread). The chosen priority is
 * left in io->ioprio, which fio's logs show (log_prio). Plain C, header only. */
#ifndef IOLAB_BENCH_CMDPRIO_H
#define IOLAB_BENCH_CMDPRIO_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* the kernel's I/O priority value: class << 13 | level (fio's ioprio_value) */
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_RT 1

struct cmdprio_options {
  unsigned percentage, klass, level;
};

/* The option table entries of an engine whose options struct has a struct cmdprio_options at
 * member FIELD. */
#define CMDPRIO_OPTIONS(type, field, engine)                                                                   \
  {"cmdprio_percentage", ENGINE_OPT_UINT, engine ": percent of the I/Os issued at cmdprio_class/cmdprio",    \
   offsetof(type, field.percentage), 0, 0, 100},                                                               \
      {"cmdprio_class", ENGINE_OPT_UINT, engine ": the class of those I/Os: 1 realtime, 2 best effort, 3 idle", \
       offsetof(type, field.klass), 1, 1, 3},                                                                  \
      {"cmdprio", ENGINE_OPT_UINT, engine ": the level of those I/Os in their class, 0 (highest) to 7",         \
       offsetof(type, field.level), 0, 0, 7}

/* Draws whether this I/O takes the cmdprio priority; when it does, sets io->ioprio and returns 1. */
static inline int cmdprio_pick(const struct cmdprio_options *o, uint64_t *state, struct io_u *io) {
  if (o->percentage == 0) return 0;
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  if (*state % 100 >= o->percentage) return 0;
  io->ioprio = (o->klass << IOPRIO_CLASS_SHIFT) | o->level;
  return 1;
}

#endif
