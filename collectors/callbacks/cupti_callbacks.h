// CuptiCallbacks: the process's single CUPTI subscriber. It forwards the callbacks the
// session needs (context and module resources, cudaProfilerStart/Stop, pushes and pops of
// NVTX ranges for the nvtx capture range) to one SessionListener, the session. The callbacks
// collector (MakeCallbackCollector) runs it as the first entry of the session's registry.
// CUPTI-free header.
#ifndef WARPSCOPE_COLLECTORS_CALLBACKS_CUPTI_CALLBACKS_H_
#define WARPSCOPE_COLLECTORS_CALLBACKS_CUPTI_CALLBACKS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "collectors/callbacks/memory_call_params.h"
#include "collectors/collector_interface.h"

namespace warpscope {

// Receives NVTX domain callbacks (creation, registered strings, pushes and pops with their
// raw attributes) and the kernel launches made through cuLaunchKernelEx, from CUPTI callback
// threads: the NCCL calls collector (collectors/nccl) follows NCCL's domain with it. Every
// method must be cheap for domains it does not follow.
class NvtxDomainObserver {
 public:
  virtual ~NvtxDomainObserver() = default;
  virtual void OnDomainCreated(const void* domain, std::string_view name) = 0;
  virtual void OnStringRegistered(const void* domain, const void* handle,
                                  std::string_view value) = 0;
  // `ascii`: the name when given as text; `registered`: its string handle otherwise;
  // `payload_type`, `payload_value`: nvtxEventAttributes_t's payload members.
  virtual void OnPush(const void* domain, uint32_t os_tid, const char* ascii,
                      const void* registered, int32_t payload_type, uint64_t payload_value) = 0;
  virtual void OnPop(const void* domain, uint32_t os_tid) = 0;
  virtual void OnLaunch(uint32_t correlation_id) = 0;
};

// One CUDA runtime or driver API call selected with SetApiCallObserver, as its callbacks see it.
struct ApiCallSite {
  bool runtime = true;          // runtime API, else driver API
  uint32_t callback_id = 0;     // CUPTI callback id within the domain
  const char* function = "";    // CUPTI's name, e.g. "cudaLaunchKernel_v7000"
  uint32_t correlation_id = 0;  // the call's activity records (kernel, copy, sync) carry it
  // At the exit of an allocation, free or map function (IsMemoryCall): its parameters, and
  // the device of the calling thread's context (0 when it has none). Null otherwise.
  const MemoryCallParams* memory = nullptr;
  uint32_t device_id = 0;
};

// Receives the CUDA runtime and driver API calls selected with SetApiCallObserver as they
// begin and as they end, on the calling thread, so that the thread's stack is the caller's.
// A driver call made inside a selected runtime call of the same thread is not sent: the
// runtime call stands for it (they share its correlation id). Each OnApiEnter is followed by
// one OnApiExit of the same call on the same thread, calls of one thread nest. Must be cheap:
// it runs inside every selected call (each kernel launch).
class ApiCallObserver {
 public:
  virtual ~ApiCallObserver() = default;
  virtual void OnApiEnter(const ApiCallSite& call) = 0;
  // `result`: the call's cudaError_t or CUresult.
  virtual void OnApiExit(const ApiCallSite& call, uint32_t result) = 0;
};

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
  // NVTX domain callbacks and cuLaunchKernelEx launches go to `observer` (nullptr: off).
  // After Subscribe.
  static void SetNvtxDomainObserver(NvtxDomainObserver* observer);
  // Enables the callbacks of every runtime and driver function for which
  // `wants(runtime, callback_id, name)` holds
  // and sends their calls to `observer` (nullptr stops sending; the callbacks stay enabled,
  // each a no-op, until Unsubscribe). After Subscribe. Returns false when a wanted function's
  // callback could not be enabled (its calls are then not sent).
  using ApiSelector = std::function<bool(bool runtime, uint32_t callback_id, std::string_view)>;
  static bool SetApiCallObserver(ApiCallObserver* observer, const ApiSelector& wants);
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
