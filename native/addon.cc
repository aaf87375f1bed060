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

static const char* const key_names[] = {"bytesRead",   "fds",  "truncated", "dataTruncated", "fdsTruncated",
                                        "eof",         "credentials", "from", "maxFds", "controlFds",
                                        "pid",         "uid",  "gid", "to", "buffers"};
static_assert(sizeof(key_names) / sizeof(key_names[0]) == size_t(Key::kCount), "one name per key");

Keys::Keys(napi_env env) : env_(env) { napi_get_reference_value(env, AddonOf(env).keys, &array_); }

napi_value Keys::operator[](Key key) const {
  napi_value value = nullptr;
  napi_get_element(env_, array_, uint32_t(key), &value);
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
  if (addon->recv_result_class != nullptr) napi_delete_reference(env, addon->recv_result_class);
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
