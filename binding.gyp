{
  # One addon. Sources are picked up by folder so that a new feature file needs no edit here:
  # native/*.cc and native/<folder>/*.{c,cc} for every folder (.cc: Node-aware features and
  # bindings, e.g. native/ring and native/sys; .c: plain C cores, no Node headers); liburing and
  # libaio statically where the system has their archives (scripts/link-libs.mjs). Build with
  # -Dasan=1 for the sanitized build (npm run build:asan); -Dtest_engines=0 leaves out the storage
  # engines only the tests use (the prebuilt addon).
  "variables": { "asan%": 0, "test_engines%": 1 },
  "targets": [
    {
      "target_name": "iolab",
      "sources": [ "<!@(node scripts/sources.mjs --test-engines=<(test_engines))" ],
      "include_dirs": [ "<!(node -p \"require('node-addon-api').include_dir\")", "native" ],
      "defines": [ "NAPI_VERSION=9", "NAPI_CPP_EXCEPTIONS", "_GNU_SOURCE" ],
      "cflags!": [ "-fno-exceptions" ],
      "cflags_cc!": [ "-fno-exceptions" ],
      "cflags": [ "-Wall", "-Wextra", "-fvisibility=hidden", "-Wno-missing-field-initializers" ],
      "cflags_c": [ "-std=gnu11" ],
      "cflags_cc": [ "-std=gnu++17", "-fexceptions", "-Wno-unused-parameter" ],
      "libraries": [ "<!@(node scripts/link-libs.mjs)" ],
      "ldflags": [ "-Wl,--version-script=<(module_root_dir)/native/exports.map" ],
      "conditions": [
        # libstdc++ and libgcc linked in as well: the addon then needs only glibc (the sanitizer
        # runtime wants the shared ones).
        [ "asan==0", { "ldflags": [ "-static-libstdc++", "-static-libgcc" ] } ],
        [ "asan==1", {
          "defines": [ "IOLAB_ASAN=1" ],
          "cflags": [ "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g", "-O1" ],
          "ldflags": [ "-fsanitize=address,undefined" ]
        } ]
      ]
    }
  ]
}
