// CuptiCallbacks: the process's single CUPTI subscriber. It forwards the callbacks the
// session needs (context and module resources, cudaProfilerStart/Stop, pushes and pops of
// NVTX ranges for the nvtx capture range) to one SessionListener, the session. The callbacks
// collector (MakeCallbackCollector) runs it as the first entry of the session's registry.
// CUPTI-free header.
#ifndef WARPSCOPE_COLLECTORS_CALLBACKS_CUPTI_CALLBACKS_H_
#define WARPSCOPE_COLLECTORS_CALLBACKS_CUPTI_CALLBACKS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "collectors/collector_interface.h"

namespace warpscope {

struct CallbackOptions {
  bool profiler_api = false;  // cuProfilerStart/Stop callbacks
  bool nvtx = false;          // NVTX push/pop callbacks
};

class CuptiCallbacks {
 public:
  // Subscribes. When another tool holds the subscription (Nsight, torch.profiler, ...),
  // returns false with *error naming it; the caller then steps aside.
  static bool Subscribe(SessionListener* handler, const CallbackOptions& options,
                        std::string* error);
  // MODULE_LOADED callbacks (cubins for PC sampling). Off unless a collector needs them:
  // PyTorch loads hundreds of modules, and the extra peak RSS of a traced PyTorch run
  // (about +140 MB measured) is suspected to come from them (unverified).
  static void EnableModuleCallbacks();
  static void Unsubscribe();
  static void AbandonAfterFork();
  static uint32_t CuptiVersion();
  static uint32_t DriverVersion();
};

// The collector that subscribes (CollectorStage::kBeforeTrace, so another CUPTI client makes
// the session step aside before any file exists), sends every callback to the session,
// enables module callbacks once an optional collector runs, unsubscribes when the session
// gives up starting, and stops forwarding in a forked child.
std::unique_ptr<SessionListener> MakeCallbackCollector();

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_CALLBACKS_CUPTI_CALLBACKS_H_
