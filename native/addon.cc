// Module init only: every feature file registered itself (registry.h); hand each the exports.
#include "registry.h"

namespace iolab {

static Feature* feature_list = nullptr;

void RegisterFeature(Feature* feature) {
  feature->next = feature_list;
  feature_list = feature;
}

void InitFeatures(Napi::Env env, Napi::Object exports) {
  for (Feature* f = feature_list; f != nullptr; f = f->next) f->init(env, exports);
}

}  // namespace iolab

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  iolab::InitFeatures(env, exports);
  return exports;
}

NODE_API_MODULE(iolab, Init)
