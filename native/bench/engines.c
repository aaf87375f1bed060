/* The engine registry: each engine_<name>.c registers itself (ENGINE_REGISTER) when the addon
 * loads; this file keeps them in list order and finds them by name. */
#include <string.h>

#include "engine.h"

#define MAX_ENGINES 32

static const struct engine_ops *engines[MAX_ENGINES];
static unsigned nengines;

void engine_register(const struct engine_ops *ops) {
  if (nengines == MAX_ENGINES) return;
  unsigned at = nengines++;
  while (at > 0 && engines[at - 1]->list_order > ops->list_order) {
    engines[at] = engines[at - 1];
    at--;
  }
  engines[at] = ops;
}

const struct engine_ops *engine_find(const char *name) {
  for (unsigned i = 0; i < nengines; i++) {
    const struct engine_ops *e = engines[i];
    if (strcmp(e->name, name) == 0 || (e->alias != NULL && strcmp(e->alias, name) == 0)) return e;
  }
  return NULL;
}

const struct engine_ops *engine_at(unsigned i) { return i < nengines ? engines[i] : NULL; }

void engine_default_options(const struct engine_ops *ops, void *opts) {
  if (ops->options_size > 0) memset(opts, 0, ops->options_size);
  for (const struct engine_option *o = ops->options; o != NULL && o->name != NULL; o++)
    *(unsigned *)((char *)opts + o->offset) = o->def;
}
