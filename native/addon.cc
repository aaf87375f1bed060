// Module init: the env's Addon state, then every feature that registered itself (registry.h).
#include "addon.h"

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

static const char* const key_names[] = {"bytes",       "fds",  "truncated", "dataTruncated", "fdsTruncated",
                                        "eof",         "credentials", "from", "maxFds", "controlFds",
                                        "pid",         "uid",  "gid"};
static_assert(sizeof(key_names) / sizeof(key_names[0]) == size_t(Key::kCount), "one name per key");

void Addon::KeyValues(napi_env env, napi_value* out) const {
  napi_value array;
  napi_get_reference_value(env, keys, &array);
  for (int i = 0; i < int(Key::kCount); i++) napi_get_element(env, array, uint32_t(i), &out[i]);
}

napi_value Addon::KeyValue(napi_env env, Key key) const {
  napi_value array, value;
  napi_get_reference_value(env, keys, &array);
  napi_get_element(env, array, uint32_t(key), &value);
  return value;
}

Addon& AddonOf(napi_env env) {
  void* data = nullptr;
  napi_get_instance_data(env, &data);
  return *static_cast<Addon*>(data);
}

static void FreeAddon(napi_env env, void* data, void*) {
  Addon* addon = static_cast<Addon*>(data);
  if (addon->ring_closed_error != nullptr) napi_delete_reference(env, addon->ring_closed_error);
  if (addon->keys != nullptr) napi_delete_reference(env, addon->keys);
  delete addon;
}

static void InitAddon(Napi::Env env) {
  Addon* addon = new Addon;
  Napi::Array keys = Napi::Array::New(env, size_t(Key::kCount));
  for (int i = 0; i < int(Key::kCount); i++) keys.Set(uint32_t(i), Napi::String::New(env, key_names[i]));
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_reference(env, keys, 1, &addon->keys));
  NAPI_THROW_IF_FAILED_VOID(env, napi_set_instance_data(env, addon, FreeAddon, nullptr));
}

}  // namespace iolab

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  iolab::InitAddon(env);
  iolab::InitFeatures(env, exports);
  return exports;
}

NODE_API_MODULE(iolab, Init)
