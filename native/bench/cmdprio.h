/* fio's cmdprio_percentage / cmdprio_class / cmdprio / cmdprio_hint of the libaio and io_uring
 * engines: that percentage of a job's I/Os is issued at the class, level and hint given (the
 * class RT unless given), the rest at the job's own priority (prioclass/prio, set on its thread);
 * or, with the job's cmdprio_bssplit (ctx->prio_split), a share of the I/Os of each direction and
 * block size at each priority it names. The chosen priority is left in io->ioprio, which fio's
 * logs show (log_prio). Plain C, header only. */
#ifndef IOLAB_BENCH_CMDPRIO_H
#define IOLAB_BENCH_CMDPRIO_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* the kernel's I/O priority value: class << 13 | level (fio's ioprio_value) */
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_HINT_SHIFT 3
#define IOPRIO_CLASS_RT 1

struct cmdprio_options {
  unsigned percentage, klass, level, hint;
};

/* The option table entries of an engine whose options struct has a struct cmdprio_options at
 * member FIELD. */
#define CMDPRIO_OPTIONS(type, field, engine)                                                                   \
  {"cmdprio_percentage", ENGINE_OPT_UINT, engine ": percent of the I/Os issued at cmdprio_class/cmdprio",    \
   offsetof(type, field.percentage), 0, 0, 100},                                                               \
      {"cmdprio_class", ENGINE_OPT_UINT, engine ": the class of those I/Os: 1 realtime, 2 best effort, 3 idle", \
       offsetof(type, field.klass), 1, 1, 3},                                                                  \
      {"cmdprio", ENGINE_OPT_UINT, engine ": the level of those I/Os in their class, 0 (highest) to 7",         \
       offsetof(type, field.level), 0, 0, 7},                                                                  \
      {"cmdprio_hint", ENGINE_OPT_UINT, engine ": the priority hint of those I/Os (fio 3.42's; 0: none)",        \
       offsetof(type, field.hint), 0, 0, 1023}

/* Draws whether this I/O takes a cmdprio priority; when it does, sets io->ioprio and returns 1. */
static inline int cmdprio_pick(const struct engine_ctx *ctx, const struct cmdprio_options *o, uint64_t *state, struct io_u *io) {
  unsigned implicit = (o->klass << IOPRIO_CLASS_SHIFT) | (o->hint << IOPRIO_HINT_SHIFT) | o->level;
  if (ctx->nprio_split == 0 && o->percentage == 0) return 0;
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  unsigned pick = (unsigned)(*state % 100), sum = 0;
  if (ctx->nprio_split == 0) {
    if (pick >= o->percentage) return 0;
    io->ioprio = implicit;
    return 1;
  }
  /* fio's bssplit mode: the entries of this direction and length, in their order */
  for (unsigned i = 0; i < ctx->nprio_split; i++) {
    const struct cmdprio_entry *e = &ctx->prio_split[i];
    if (e->ddir != io->ddir || e->bs != io->len) continue;
    sum += e->perc;
    if (pick < sum) {
      io->ioprio = e->prio >= 0 ? (unsigned)e->prio : implicit;
      return 1;
    }
  }
  return 0;
}

#endif
