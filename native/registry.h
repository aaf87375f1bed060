// Each feature file registers its exports with one IOLAB_FEATURE line, so addon.cc never
// changes when a feature is added. Registration runs at load time (static initialisers);
// the list head is constant-initialised, so the order of files does not matter.
#pragma once
#include <napi.h>

namespace iolab {

using FeatureInit = void (*)(Napi::Env env, Napi::Object exports);

struct Feature {
  const char* name;
  FeatureInit init;
  Feature* next;
};

void RegisterFeature(Feature* feature);
void InitFeatures(Napi::Env env, Napi::Object exports);

struct FeatureRegistration {
  Feature feature;
  FeatureRegistration(const char* name, FeatureInit init) : feature{name, init, nullptr} {
    RegisterFeature(&feature);
  }
};

}  // namespace iolab

#define IOLAB_FEATURE(name, init) \
  static ::iolab::FeatureRegistration iolab_feature_##name(#name, init)
