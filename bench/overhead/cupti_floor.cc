// libws_cupti_floor.so: the overhead benchmark's CUPTI floor. An injection library
// (CUDA_INJECTION64_PATH) that asks CUPTI for what a tracer needs and does nothing with it
// but count: CUPTI's own cost, which no CUPTI-based tracer can go below.
//   WS_FLOOR_KINDS  comma-separated, default kernel,runtime,memory,nvtx,sync (the activity
//                   kinds warpscope recorded per API call). Context and device records always.
//     kernel, runtime, memory, nvtx, sync, alloc, internal: activity kinds (alloc: MEMORY2
//       and MEMORY_POOL, as warpscope's `alloc` kind enables; internal: kernel
//       launches made outside any public API call, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API);
//     launch: a CUPTI callback on every runtime and driver kernel-launch and graph-launch
//       function that takes a timestamp at enter and exit into a thread_local: the least a
//       tracer that records launches from callbacks can pay.
//     calls: the same timestamp-only callback on every runtime function but the trivial
//       queries (collectors/activity/trivial_runtime_apis.h), launches included: what a tracer
//       that records the runtime API from callbacks, as warpscope's `runtime` kind does, pays.
//   WS_FLOOR_TIMESTAMP_CALLBACK=1  a CLOCK_MONOTONIC timestamp callback, as warpscope has.
//   WS_FLOOR_TOGGLE=1  the kinds and callbacks start off; cudaProfilerStart turns them on and
//                  cudaProfilerStop off, so that one process measures itself both ways
//                  (bench/overhead/inprocess_cost.py).
//   WS_FLOOR_QUIET  unset: one stderr line at exit with the counts (the benchmark reads it).
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#include <cupti.h>

#include "collectors/activity/trivial_runtime_apis.h"

namespace {

std::atomic<unsigned long long> g_records{0};
constexpr size_t kBufferBytes = 8 << 20;

// What a launch callback keeps: its two timestamps, and a count so that the exit line can
// show the callbacks fired (the count of the thread that exits, PyTorch's launching one).
struct LaunchTimes {
  uint64_t enter_ns = 0;
  uint64_t exit_ns = 0;
  unsigned long long launches = 0;
};
thread_local LaunchTimes t_launch;
int g_launch_callbacks = 0;  // callback ids enabled

uint64_t CUPTIAPI Monotonic() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void CUPTIAPI Request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  unsigned long long n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) ++n;
  g_records += n;
  std::free(buffer);
}

struct Callback {
  CUpti_CallbackDomain domain;
  uint32_t id;
};
CUpti_SubscriberHandle g_subscriber = nullptr;
std::vector<Callback> g_timed;         // the launch (or every runtime) callbacks
std::vector<CUpti_ActivityKind> g_on;  // the activity kinds asked for
bool g_toggle = false;

void SetOn(bool on) {
  for (CUpti_ActivityKind a : g_on) on ? cuptiActivityEnable(a) : cuptiActivityDisable(a);
  for (const Callback& c : g_timed) cuptiEnableCallback(on ? 1 : 0, g_subscriber, c.domain, c.id);
  if (!on) cuptiActivityFlushAll(0);
}

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                         const void* data) {
  const auto* c = static_cast<const CUpti_CallbackData*>(data);
  if (g_toggle && domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    if (id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart && c->callbackSite == CUPTI_API_EXIT) {
      SetOn(true);
      return;
    }
    if (id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop && c->callbackSite == CUPTI_API_ENTER) {
      SetOn(false);
      return;
    }
  }
  uint64_t now = 0;
  cuptiGetTimestamp(&now);
  if (c->callbackSite == CUPTI_API_ENTER) {
    t_launch.enter_ns = now;
    ++t_launch.launches;
  } else {
    t_launch.exit_ns = now;
  }
}

// The functions that launch a kernel or a graph, by name, as warpscope's stack settings name
// them (collectors/stacks/stack_config.cc). CUDA 13's `<<<>>>` calls __cudaLaunchKernel, hence
// the leading underscores are skipped; "cudaLaunch_" and "cuLaunch" alone are the old calls.
bool IsLaunch(const char* name) {
  while (*name == '_') ++name;
  for (const char* prefix :
       {"cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaGraphLaunch", "cudaLaunch_",
        "cuLaunchKernel", "cuLaunchCooperativeKernel", "cuGraphLaunch", "cuLaunchGrid"}) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return std::strcmp(name, "cuLaunch") == 0;
}

bool IsTrivial(uint32_t id) {
  for (uint32_t t : warpscope::kTrivialRuntimeApis) {
    if (t == id) return true;
  }
  return false;
}

// `launches`: the launch functions of both APIs; `calls`: every runtime function but the
// trivial ones.
void SelectTimed(bool launches, bool calls) {
  const bool quiet = std::getenv("WS_FLOOR_QUIET") != nullptr;
  struct Domain {
    CUpti_CallbackDomain domain;
    uint32_t size;
  };
  for (const Domain d : {Domain{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
                         Domain{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}}) {
    for (uint32_t id = 1; id < d.size; ++id) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(d.domain, id, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      const bool runtime = d.domain == CUPTI_CB_DOMAIN_RUNTIME_API;
      if (!(launches && IsLaunch(name)) && !(calls && runtime && !IsTrivial(id))) continue;
      g_timed.push_back({d.domain, id});
      ++g_launch_callbacks;
      if (!quiet) std::fprintf(stderr, "ws_cupti_floor: timed callback %s\n", name);
    }
  }
}

void AtExit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (std::getenv("WS_FLOOR_QUIET") == nullptr) {
    std::fprintf(stderr,
                 "ws_cupti_floor: %llu records, %llu timed callbacks on the exiting "
                 "thread (%d callback ids)\n",
                 g_records.load(), t_launch.launches, g_launch_callbacks);
  }
}

}  // namespace

// NVTX through the floor too (NVTX_INJECTION64_PATH=<this library>), so that MARKER records
// cost what they cost warpscope.
extern "C" CUptiResult cuptiNvtxInitialize2(void* pfnGetExportTable);
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(void* table) {
  return cuptiNvtxInitialize2(table) == CUPTI_SUCCESS;
}

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* ts = std::getenv("WS_FLOOR_TIMESTAMP_CALLBACK");
  if (ts && ts[0] == '1') cuptiActivityRegisterTimestampCallback(&Monotonic);
  cuptiActivityRegisterCallbacks(&Request, &Complete);
  struct Kind {
    const char* name;
    CUpti_ActivityKind kinds[2];
  };
  const Kind kinds[] = {
      {"kernel", {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}},
      {"memory", {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}},
      {"memory", {CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMCPY2}},
      {"runtime", {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME}},
      {"nvtx", {CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_MARKER_DATA}},
      {"sync", {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}},
      {"alloc", {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY_POOL}},
      {"internal",
       {CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API}}};
  const char* env = std::getenv("WS_FLOOR_KINDS");
  const char* only = env != nullptr ? env : "kernel,runtime,memory,nvtx,sync";
  const char* toggle = std::getenv("WS_FLOOR_TOGGLE");
  g_toggle = toggle != nullptr && toggle[0] == '1';
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  for (const Kind& k : kinds) {
    if (std::strstr(only, k.name) == nullptr) continue;
    for (CUpti_ActivityKind a : k.kinds) {
      if (g_on.empty() || g_on.back() != a) g_on.push_back(a);
    }
  }
  SelectTimed(std::strstr(only, "launch") != nullptr, std::strstr(only, "calls") != nullptr);
  if (!g_timed.empty() || g_toggle) {
    if (cuptiSubscribe(&g_subscriber, &OnCallback, nullptr) != CUPTI_SUCCESS) {
      std::fprintf(stderr, "ws_cupti_floor: cuptiSubscribe failed, no callbacks\n");
      g_timed.clear();
      g_toggle = false;
    }
  }
  if (g_toggle) {
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                        CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                        CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
  } else {
    SetOn(true);
  }
  std::atexit(&AtExit);
  return 1;
}
