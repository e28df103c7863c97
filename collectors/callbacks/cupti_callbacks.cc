// The single CUPTI subscriber (see cupti_callbacks.h).
//
// Lifecycle: cuptiSubscribe_v2 (first CUPTI call; on MULTIPLE_SUBSCRIBERS step aside) →
// enable RESOURCE callbacks (contexts, modules) → cuProfilerStart/Stop callbacks when the
// capture range is cudaProfilerApi → NVTX push/pop callbacks when it is nvtx → at shutdown
// cuptiUnsubscribe. Callbacks never throw and do no CUDA calls; they only forward.
#include "collectors/callbacks/cupti_callbacks.h"

#include <cupti.h>
#include <dlfcn.h>
#include <generated_nvtx_meta.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "collectors/common/cupti_util.h"

namespace warpscope {
namespace {

CUpti_SubscriberHandle g_subscriber = nullptr;
SessionListener* g_handler = nullptr;
std::atomic<bool> g_live{false};
bool g_nvtx_capture = false;                      // NVTX pushes and pops go to the session
std::atomic<NvtxDomainObserver*> g_domains_observer{nullptr};  // NCCL's calls
std::mutex g_domain_mu;
std::unordered_map<const void*, std::string>* g_domains = nullptr;  // nvtxDomainHandle_t -> name
std::atomic<ApiCallObserver*> g_api_observer{nullptr};  // the API calls collector
bool g_runtime_selected[CUPTI_RUNTIME_TRACE_CBID_SIZE] = {};
bool g_driver_selected[CUPTI_DRIVER_TRACE_CBID_SIZE] = {};
// Selected functions whose parameters are read at exit (IsMemoryCall).
bool g_runtime_memory[CUPTI_RUNTIME_TRACE_CBID_SIZE] = {};
bool g_driver_memory[CUPTI_DRIVER_TRACE_CBID_SIZE] = {};
// Selected runtime calls this thread is inside: their own driver calls are not sent.
thread_local int t_runtime_depth = 0;

uint32_t OsTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// A selected call's enter or exit, to the observer.
void SendApiCall(bool runtime, CUpti_CallbackId cbid, const CUpti_CallbackData* c, bool enter) {
  ApiCallObserver* o = g_api_observer.load(std::memory_order_acquire);
  if (o == nullptr) return;
  ApiCallSite call;
  call.runtime = runtime;
  call.callback_id = cbid;
  call.function = c->functionName != nullptr ? c->functionName : "";
  call.correlation_id = c->correlationId;
  if (enter) {
    o->OnApiEnter(call);
    return;
  }
  // Allocation functions only (rare calls): what they asked for or mapped.
  MemoryCallParams memory;
  if ((runtime ? g_runtime_memory : g_driver_memory)[cbid] &&
      ReadMemoryCallParams(runtime, cbid, c->functionParams, &memory)) {
    call.memory = &memory;
    if (c->context != nullptr) cuptiGetDeviceId(c->context, &call.device_id);
  }
  // Both CUDA APIs return an int-sized status (cudaError_t, CUresult).
  const auto* status = static_cast<const int*>(c->functionReturnValue);
  o->OnApiExit(call, status != nullptr ? static_cast<uint32_t>(*status) : 0);
}

std::string DomainName(const void* handle) {
  if (handle == nullptr) return {};
  std::lock_guard<std::mutex> lock(g_domain_mu);
  auto it = g_domains->find(handle);
  return it == g_domains->end() ? std::string("<unnamed domain>") : it->second;
}

const char* AttribMessage(const nvtxEventAttributes_t* a) {
  if (a == nullptr || a->messageType != NVTX_MESSAGE_TYPE_ASCII) return nullptr;
  return a->message.ascii;
}

// Domain creation and strings, and domain pushes and pops with their attributes, for the
// observer (the NCCL calls collector).
void HandleDomainNvtx(NvtxDomainObserver& nccl, CUpti_CallbackId cbid, const CUpti_NvtxData* d) {
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
      auto* p = static_cast<const nvtxDomainCreateA_params*>(d->functionParams);
      auto* ret = static_cast<const nvtxDomainHandle_t*>(d->functionReturnValue);
      if (p && p->name && ret) nccl.OnDomainCreated(*ret, p->name);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA: {
      auto* p = static_cast<const nvtxDomainRegisterStringA_params*>(d->functionParams);
      auto* ret = static_cast<const nvtxStringHandle_t*>(d->functionReturnValue);
      if (p && p->string && ret) nccl.OnStringRegistered(p->domain, *ret, p->string);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      auto* p = static_cast<const nvtxDomainRangePushEx_params*>(d->functionParams);
      const nvtxEventAttributes_t* a = p ? p->core.eventAttrib : nullptr;
      if (a == nullptr) break;
      nccl.OnPush(p->domain, OsTid(), AttribMessage(a),
                  a->messageType == NVTX_MESSAGE_TYPE_REGISTERED ? a->message.registered : nullptr,
                  a->payloadType, a->payload.ullValue);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
      auto* p = static_cast<const nvtxDomainRangePop_params*>(d->functionParams);
      if (p) nccl.OnPop(p->domain, OsTid());
      break;
    }
    default:
      break;
  }
}

void HandleNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* d) {
  if (d == nullptr) return;
  if (NvtxDomainObserver* o = g_domains_observer.load(std::memory_order_acquire)) {
    HandleDomainNvtx(*o, cbid, d);
  }
  if (!g_nvtx_capture && cbid != CUPTI_CBID_NVTX_nvtxDomainCreateA) return;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      auto* p = static_cast<const nvtxRangePushA_params*>(d->functionParams);
      g_handler->OnNvtxPush(OsTid(), p && p->message ? p->message : "", "");
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx: {
      auto* p = static_cast<const nvtxRangePushEx_params*>(d->functionParams);
      const char* m = p ? AttribMessage(p->eventAttrib) : nullptr;
      g_handler->OnNvtxPush(OsTid(), m ? m : "", "");
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      g_handler->OnNvtxPush(OsTid(), "", "");  // wide names never match; keep depth right
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
      g_handler->OnNvtxPop(OsTid(), "");
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      auto* p = static_cast<const nvtxDomainRangePushEx_params*>(d->functionParams);
      if (p == nullptr) break;
      const char* m = AttribMessage(p->core.eventAttrib);
      g_handler->OnNvtxPush(OsTid(), m ? m : "", DomainName(p->domain));
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
      auto* p = static_cast<const nvtxDomainRangePop_params*>(d->functionParams);
      g_handler->OnNvtxPop(OsTid(), p ? DomainName(p->domain) : "");
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
      auto* p = static_cast<const nvtxDomainCreateA_params*>(d->functionParams);
      auto* ret = static_cast<const nvtxDomainHandle_t*>(d->functionReturnValue);
      if (p && p->name && ret && *ret) {
        std::lock_guard<std::mutex> lock(g_domain_mu);
        (*g_domains)[*ret] = p->name;
      }
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI Callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                       const void* data) {
  if (!g_live.load(std::memory_order_acquire) || g_handler == nullptr) return;
  try {
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      auto* r = static_cast<const CUpti_ResourceData*>(data);
      if (r == nullptr) return;
      uint32_t context_id = 0, device_id = 0;
      if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        cuptiGetContextId(r->context, &context_id);
        cuptiGetDeviceId(r->context, &device_id);
        g_handler->OnContextCreated(r->context, context_id, device_id);
      } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        cuptiGetContextId(r->context, &context_id);
        g_handler->OnContextDestroying(r->context, context_id);
      } else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
        auto* m = static_cast<const CUpti_ModuleResourceData*>(r->resourceDescriptor);
        if (m != nullptr) g_handler->OnModuleLoaded(r->context, m->moduleId, m->pCubin, m->cubinSize);
      }
      // Never flush in STREAM_DESTROY_STARTING (deadlocks, CUPTI docs): not subscribed.
    } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
      auto* c = static_cast<const CUpti_CallbackData*>(data);
      if (c == nullptr || cbid >= CUPTI_RUNTIME_TRACE_CBID_SIZE || !g_runtime_selected[cbid]) {
        return;
      }
      const bool enter = c->callbackSite == CUPTI_API_ENTER;
      if (enter) {
        ++t_runtime_depth;
      } else if (t_runtime_depth > 0) {
        --t_runtime_depth;
      }
      SendApiCall(true, cbid, c, enter);
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      auto* c = static_cast<const CUpti_CallbackData*>(data);
      if (c == nullptr) return;
      if (cbid < CUPTI_DRIVER_TRACE_CBID_SIZE && g_driver_selected[cbid] && t_runtime_depth == 0) {
        SendApiCall(false, cbid, c, c->callbackSite == CUPTI_API_ENTER);
      }
      // Open after cuProfilerStart returns, close before cuProfilerStop runs, so the window
      // holds exactly the work between the two calls.
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx) {
        NvtxDomainObserver* o = g_domains_observer.load(std::memory_order_acquire);
        if (o != nullptr && c->callbackSite == CUPTI_API_ENTER) o->OnLaunch(c->correlationId);
      } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart &&
                 c->callbackSite == CUPTI_API_EXIT) {
        g_handler->OnProfilerApi(true);
      } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop &&
                 c->callbackSite == CUPTI_API_ENTER) {
        g_handler->OnProfilerApi(false);
      }
    } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
      HandleNvtx(cbid, static_cast<const CUpti_NvtxData*>(data));
    }
  } catch (...) {
    // Swallowed: nothing may unwind into the driver.
  }
}

}  // namespace

bool CuptiCallbacks::Subscribe(SessionListener* handler, const CallbackOptions& options,
                               std::string* error) {
  g_handler = handler;
  if (g_domains == nullptr) g_domains = new std::unordered_map<const void*, std::string>();
  char old_name[256] = {0};
  CUpti_SubscriberParams params = {};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "warpscope";
  params.oldSubscriberName = old_name;
  params.oldSubscriberSize = sizeof old_name;
  CUptiResult r = cuptiSubscribe_v2(&g_subscriber, &Callback, nullptr, &params);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    *error = std::string("warpscope: another CUPTI client is already attached (") +
             (old_name[0] ? old_name : "unnamed; Nsight Systems/Compute, cuda-gdb or a profiler "
                                       "in the program") +
             "); warpscope steps aside and this run is not profiled";
    return false;
  }
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
    *error = "warpscope: CUPTI refused access (insufficient privileges); running without "
             "profiling";
    return false;
  }
  if (r != CUPTI_SUCCESS) {
    *error = "warpscope: cuptiSubscribe failed: " + CuptiErrorText(r) +
             "; running without profiling";
    return false;
  }
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                      CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  if (options.profiler_api) {
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                        CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                        CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
  }
  g_nvtx_capture = options.nvtx;
  if (options.nvtx) {
    const CUpti_CallbackId ids[] = {
        CUPTI_CBID_NVTX_nvtxRangePushA,        CUPTI_CBID_NVTX_nvtxRangePushW,
        CUPTI_CBID_NVTX_nvtxRangePushEx,       CUPTI_CBID_NVTX_nvtxRangePop,
        CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop,
        CUPTI_CBID_NVTX_nvtxDomainCreateA};
    for (CUpti_CallbackId id : ids) cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_NVTX, id);
  }
  g_live.store(true, std::memory_order_release);
  return true;
}

void CuptiCallbacks::SetNvtxDomainObserver(NvtxDomainObserver* observer) {
  if (g_subscriber == nullptr) return;
  g_domains_observer.store(observer, std::memory_order_release);
  const int on = observer != nullptr ? 1 : 0;
  for (CUpti_CallbackId id :
       {CUPTI_CBID_NVTX_nvtxDomainCreateA, CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
        CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop}) {
    // Off only where the nvtx capture range does not need them.
    if (on || !g_nvtx_capture || id == CUPTI_CBID_NVTX_nvtxDomainRegisterStringA) {
      cuptiEnableCallback(on, g_subscriber, CUPTI_CB_DOMAIN_NVTX, id);
    }
  }
  // NCCL launches its kernels with cuLaunchKernelEx inside its NVTX ranges. The callback stays
  // on where the API call observer selected it (every launch is logged).
  if (on || !g_driver_selected[CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx]) {
    cuptiEnableCallback(on, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
  }
}

bool CuptiCallbacks::SetApiCallObserver(ApiCallObserver* observer, const ApiSelector& wants) {
  if (g_subscriber == nullptr) return false;
  bool all = true;
  if (observer != nullptr) {
    struct Domain {
      CUpti_CallbackDomain domain;
      uint32_t size;
      bool* selected;
    };
    for (const Domain& d :
         {Domain{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, g_runtime_selected},
          Domain{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, g_driver_selected}}) {
      for (uint32_t id = 1; id < d.size; ++id) {
        const char* name = nullptr;
        if (cuptiGetCallbackName(d.domain, id, &name) != CUPTI_SUCCESS || name == nullptr ||
            !wants(d.domain == CUPTI_CB_DOMAIN_RUNTIME_API, id, name)) {
          continue;
        }
        if (cuptiEnableCallback(1, g_subscriber, d.domain, id) == CUPTI_SUCCESS) {
          d.selected[id] = true;
          const bool runtime = d.domain == CUPTI_CB_DOMAIN_RUNTIME_API;
          (runtime ? g_runtime_memory : g_driver_memory)[id] = IsMemoryCall(runtime, id);
        } else {
          all = false;
        }
      }
    }
  }
  g_api_observer.store(observer, std::memory_order_release);
  return all;
}

void CuptiCallbacks::EnableModuleCallbacks() {
  if (g_subscriber != nullptr) {
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  }
}

void CuptiCallbacks::Unsubscribe() {
  if (!g_live.exchange(false)) return;
  cuptiUnsubscribe(g_subscriber);
  g_subscriber = nullptr;
}

void CuptiCallbacks::AbandonAfterFork() { g_live.store(false); }

uint32_t CuptiCallbacks::CuptiVersion() {
  uint32_t v = 0;
  return cuptiGetVersion(&v) == CUPTI_SUCCESS ? v : 0;
}

namespace {

class CallbackCollector final : public SessionListener {
 public:
  std::string_view name() const override { return "callbacks"; }
  bool OnSessionStart(SessionServices& services) override {
    CallbackOptions options;
    options.profiler_api = services.options().profiler_api_callbacks;
    options.nvtx = services.options().nvtx_callbacks;
    std::string error;
    if (CuptiCallbacks::Subscribe(&services.callback_target(), options, &error)) return true;
    services.ReportStartError(error);
    return false;
  }
  void OnCollectorsStarted(size_t optional_running) override {
    if (optional_running > 0) CuptiCallbacks::EnableModuleCallbacks();
  }
  void OnStartAbandoned() override { CuptiCallbacks::Unsubscribe(); }
  void OnForkChild() override { CuptiCallbacks::AbandonAfterFork(); }
};

}  // namespace

std::unique_ptr<SessionListener> MakeCallbackCollector() {
  return std::make_unique<CallbackCollector>();
}

uint32_t CuptiCallbacks::DriverVersion() {
  using Fn = int (*)(int*);
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto fn = cuda ? reinterpret_cast<Fn>(dlsym(cuda, "cuDriverGetVersion")) : nullptr;
  int v = 0;
  if (fn == nullptr || fn(&v) != 0) return 0;
  return static_cast<uint32_t>(v);
}

}  // namespace warpscope
