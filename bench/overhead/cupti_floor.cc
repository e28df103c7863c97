// libws_cupti_floor.so: the overhead benchmark's CUPTI floor. An injection library
// (CUDA_INJECTION64_PATH) that asks CUPTI for what a tracer needs and does nothing with it
// but count: CUPTI's own cost, which no CUPTI-based tracer can go below.
//   WS_FLOOR_KINDS  comma-separated, default kernel,runtime,memory,nvtx,sync (the activity
//                   kinds warpscope recorded per API call). Context and device records always.
//     kernel, runtime, memory, nvtx, sync, internal: activity kinds (internal: kernel
//       launches made outside any public API call, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API);
//     launch: a CUPTI callback on every runtime and driver kernel-launch and graph-launch
//       function that takes a timestamp at enter and exit into a thread_local: the least a
//       tracer that records launches from callbacks can pay.
//   WS_FLOOR_TIMESTAMP_CALLBACK=1  a CLOCK_MONOTONIC timestamp callback, as warpscope has.
//   WS_FLOOR_QUIET  unset: one stderr line at exit with the counts (the benchmark reads it).
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include <cupti.h>

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

void CUPTIAPI OnLaunch(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  uint64_t now = 0;
  cuptiGetTimestamp(&now);
  if (static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_ENTER) {
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

void SubscribeLaunches() {
  CUpti_SubscriberHandle subscriber = nullptr;
  if (cuptiSubscribe(&subscriber, &OnLaunch, nullptr) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "ws_cupti_floor: cuptiSubscribe failed, no launch callbacks\n");
    return;
  }
  const bool quiet = std::getenv("WS_FLOOR_QUIET") != nullptr;
  struct Domain {
    CUpti_CallbackDomain domain;
    uint32_t size;
  };
  for (const Domain d : {Domain{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
                         Domain{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}}) {
    for (uint32_t id = 1; id < d.size; ++id) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(d.domain, id, &name) != CUPTI_SUCCESS || name == nullptr ||
          !IsLaunch(name) || cuptiEnableCallback(1, subscriber, d.domain, id) != CUPTI_SUCCESS) {
        continue;
      }
      ++g_launch_callbacks;
      if (!quiet) std::fprintf(stderr, "ws_cupti_floor: launch callback %s\n", name);
    }
  }
}

void AtExit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (std::getenv("WS_FLOOR_QUIET") == nullptr) {
    std::fprintf(stderr,
                 "ws_cupti_floor: %llu records, %llu launch callbacks on the exiting "
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
      {"internal",
       {CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API}}};
  const char* env = std::getenv("WS_FLOOR_KINDS");
  const char* only = env != nullptr ? env : "kernel,runtime,memory,nvtx,sync";
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  for (const Kind& k : kinds) {
    if (std::strstr(only, k.name) == nullptr) continue;
    for (CUpti_ActivityKind a : k.kinds) cuptiActivityEnable(a);
  }
  if (std::strstr(only, "launch") != nullptr) SubscribeLaunches();
  std::atexit(&AtExit);
  return 1;
}
