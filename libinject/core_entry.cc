// The C entry points of libwarpscope_core.so: the driver's InitializeInjection (directly, or
// forwarded by the libwarpscope.so shim). Nothing here may throw or exit.
#include <dlfcn.h>
#include <stdlib.h>

#include "libinject/session.h"

#define WS_EXPORT extern "C" __attribute__((visibility("default")))

WS_EXPORT int warpscope_core_initialize_injection() {
  // When the core was named directly in CUDA_INJECTION64_PATH, also route NVTX through it
  // (takes effect for NVTX calls made after cuInit).
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&warpscope_core_initialize_injection), &info) != 0 &&
      info.dli_fname != nullptr) {
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
  }
  warpscope::StartSession();
  return 1;
}

WS_EXPORT int InitializeInjection() { return warpscope_core_initialize_injection(); }
