// The C entry points of libwarpscope_core.so: the driver's InitializeInjection and NVTX's
// InitializeInjectionNvtx* (directly, or forwarded by the libwarpscope.so shim). Nothing
// here may throw or exit.
#include <dlfcn.h>
#include <stdlib.h>

#include "collectors/nvtx/cupti_nvtx_injection.h"
#include "libinject/session.h"

#define WS_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// NVTX asks for its tool at the program's first NVTX call, which often comes before the
// first CUDA call (a range around the whole run or its data loading). CUPTI's NVTX entry
// points assume CUPTI is initialised already, so the session starts here when CUDA has not
// started it yet: its cuptiSubscribe initialises CUPTI, and ranges opened before CUDA are
// recorded. When the session does not run (bad configuration, another CUPTI client, a
// forked child), NVTX is told there is no tool and stays a no-op.
int InitializeNvtx(warpscope::NvtxInjectionEntry entry, void* arg) {
  warpscope::StartSession();
  if (!warpscope::SessionRunning()) return 0;
  return warpscope::CuptiNvtxInitialize(entry, arg) ? 1 : 0;
}

}  // namespace

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

WS_EXPORT int warpscope_core_initialize_nvtx2(void* get_export_table) {
  return InitializeNvtx(warpscope::NvtxInjectionEntry::kV2, get_export_table);
}
WS_EXPORT int warpscope_core_initialize_nvtx(void* get_export_table) {
  return InitializeNvtx(warpscope::NvtxInjectionEntry::kV1, get_export_table);
}
WS_EXPORT int warpscope_core_initialize_nvtx_extension(void* ext_info) {
  return InitializeNvtx(warpscope::NvtxInjectionEntry::kExtension, ext_info);
}

// Called by the shim's _exit/_Exit before the process ends without atexit handlers: closes
// the trace (bounded wait; async-signal-safe on the calling thread).
WS_EXPORT void warpscope_core_before_exit() { warpscope::CloseBeforeQuickExit(); }

// The same entry points under the names the driver and NVTX look for, for
// CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH naming the core itself.
WS_EXPORT int InitializeInjection() { return warpscope_core_initialize_injection(); }
WS_EXPORT int InitializeInjectionNvtx2(void* t) { return warpscope_core_initialize_nvtx2(t); }
WS_EXPORT int InitializeInjectionNvtx(void* t) { return warpscope_core_initialize_nvtx(t); }
WS_EXPORT int InitializeInjectionNvtxExtension(void* e) {
  return warpscope_core_initialize_nvtx_extension(e);
}
