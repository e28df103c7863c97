// Probe (not part of warpscope): what NCCL's NVTX calls carry and how they line up with its
// kernel launches. LD_PRELOAD it with NVTX_INJECTION64_PATH naming libcupti; each process
// writes $PROBE_DIR/probe_<pid>.txt: domain creation, registered strings, domain pushes with
// their extended payload (schema id, size, bytes) and pops, and every runtime/driver launch.
//   g++ -shared -fPIC -O2 -I$CUDA/include nccl_nvtx_probe.cc -o libnccl_probe.so -lcupti
#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

FILE* g_out = nullptr;
std::mutex g_mu;
std::atomic<int> g_lines{0};
constexpr int kMaxLines = 20000;
constexpr int32_t kPayloadTypeExt = static_cast<int32_t>(0xDFBD0009);

struct PayloadData {
  uint64_t schema_id;
  size_t size;
  const void* payload;
};

uint64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void Line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Line(const char* fmt, ...) {
  if (g_out == nullptr || g_lines.fetch_add(1) > kMaxLines) return;
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(g_out, "%llu tid=%ld ", static_cast<unsigned long long>(Now()), syscall(SYS_gettid));
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(g_out, fmt, ap);
  va_end(ap);
  std::fputc('\n', g_out);
  std::fflush(g_out);
}

void Nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* d) {
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
      auto* p = static_cast<const nvtxDomainCreateA_params*>(d->functionParams);
      auto* r = static_cast<const nvtxDomainHandle_t*>(d->functionReturnValue);
      Line("DOMAIN %s handle=%p", p->name ? p->name : "?", r ? static_cast<void*>(*r) : nullptr);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA: {
      auto* p = static_cast<const nvtxDomainRegisterStringA_params*>(d->functionParams);
      auto* r = static_cast<const nvtxStringHandle_t*>(d->functionReturnValue);
      Line("STRING domain=%p %s handle=%p", static_cast<void*>(p->domain), p->string ? p->string : "?",
           r ? static_cast<void*>(*r) : nullptr);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      auto* p = static_cast<const nvtxDomainRangePushEx_params*>(d->functionParams);
      const nvtxEventAttributes_t* a = p->core.eventAttrib;
      if (a == nullptr) break;
      char hex[3 * 64 + 1] = {0};
      unsigned long long schema = 0, size = 0;
      if (a->payloadType == kPayloadTypeExt && a->payload.ullValue != 0) {
        auto* pd = reinterpret_cast<const PayloadData*>(a->payload.ullValue);
        schema = pd->schema_id;
        size = pd->size;
        const unsigned char* b = static_cast<const unsigned char*>(pd->payload);
        for (size_t i = 0; b != nullptr && i < pd->size && i < 64; ++i) {
          std::snprintf(hex + 3 * i, 4, "%02x ", b[i]);
        }
      }
      Line("PUSH domain=%p msgtype=%d msg=%s reg=%p ptype=%d count=%u schema=%llu size=%llu bytes=%s",
           static_cast<void*>(p->domain), a->messageType,
           a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii ? a->message.ascii : "",
           a->messageType == NVTX_MESSAGE_TYPE_REGISTERED ? static_cast<void*>(a->message.registered)
                                                          : nullptr,
           a->payloadType, a->reserved0, schema, size, hex);
      break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
      auto* p = static_cast<const nvtxDomainRangePop_params*>(d->functionParams);
      Line("POP domain=%p", static_cast<void*>(p->domain));
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI Callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    Nvtx(cbid, static_cast<const CUpti_NvtxData*>(data));
    return;
  }
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (d->callbackSite != CUPTI_API_ENTER) return;
  const char* sym = d->symbolName ? d->symbolName : "";
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
      (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx)) {
    Line("DRV %s corr=%u sym=%.80s", d->functionName, d->correlationId, sym);
  } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && std::strstr(d->functionName, "Launch") != nullptr) {
    Line("RT %s corr=%u sym=%.80s", d->functionName, d->correlationId, sym);
  }
}

__attribute__((constructor)) void Start() {
  const char* dir = std::getenv("PROBE_DIR");
  if (dir == nullptr || std::getenv("RANK") == nullptr) return;  // ranks only, not torchrun
  char path[512];
  std::snprintf(path, sizeof path, "%s/probe_rank%s.txt", dir, std::getenv("RANK"));
  g_out = std::fopen(path, "w");
  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, &Callback, nullptr) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "probe: cuptiSubscribe failed\n");
    return;
  }
  for (CUpti_CallbackId id : {CUPTI_CBID_NVTX_nvtxDomainCreateA, CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
                              CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop}) {
    cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_NVTX, id);
  }
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  Line("START pid=%d", getpid());
}

}  // namespace
