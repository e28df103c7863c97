// CuptiCallbacks: the process's single CUPTI subscriber. It forwards the callbacks the
// session needs (context and module resources, cudaProfilerStart/Stop, pushes and pops of
// NVTX ranges for the nvtx capture range) to a CallbackHandler. CUPTI-free header.
#ifndef WARPSCOPE_COLLECTORS_CALLBACKS_CUPTI_CALLBACKS_H_
#define WARPSCOPE_COLLECTORS_CALLBACKS_CUPTI_CALLBACKS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace warpscope {

class CallbackHandler {
 public:
  virtual ~CallbackHandler() = default;
  virtual void OnContextCreated(void* cu_context, uint32_t context_id, uint32_t device_id) = 0;
  virtual void OnContextDestroying(void* cu_context, uint32_t context_id) = 0;
  virtual void OnModuleLoaded(void* cu_context, uint64_t module_id, const void* cubin,
                              size_t size) = 0;
  virtual void OnProfilerApi(bool start) = 0;
  // os_tid of the calling thread; domain "" = default domain.
  virtual void OnNvtxPush(uint32_t os_tid, std::string_view name, std::string_view domain) = 0;
  virtual void OnNvtxPop(uint32_t os_tid, std::string_view domain) = 0;
};

struct CallbackOptions {
  bool profiler_api = false;  // cuProfilerStart/Stop callbacks
  bool nvtx = false;          // NVTX push/pop callbacks
};

class CuptiCallbacks {
 public:
  // Subscribes. When another tool holds the subscription (Nsight, torch.profiler, ...),
  // returns false with *error naming it; the caller then steps aside.
  static bool Subscribe(CallbackHandler* handler, const CallbackOptions& options,
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

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_CALLBACKS_CUPTI_CALLBACKS_H_
