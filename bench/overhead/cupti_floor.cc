// libws_cupti_floor.so: the overhead benchmark's CUPTI floor. An injection library
// (CUDA_INJECTION64_PATH) that enables the same activity kinds as warpscope's default
// tracing with the same buffer size, and only counts the records it gets: CUPTI's own cost,
// which no CUPTI-based tracer can go below. WS_FLOOR_TIMESTAMP_CALLBACK=1 also registers a
// CLOCK_MONOTONIC timestamp callback like warpscope does (to measure what that costs).
// WS_FLOOR_KINDS=kernel,runtime,memory,nvtx,sync enables only the kinds named (context and
// device records always), to find which kind costs what.
#include <cupti.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<unsigned long long> g_records{0};
constexpr size_t kBufferBytes = 8 << 20;

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

void AtExit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (std::getenv("WS_FLOOR_QUIET") == nullptr) {
    std::fprintf(stderr, "ws_cupti_floor: %llu records\n", g_records.load());
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
      {"sync", {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}}};
  const char* only = std::getenv("WS_FLOOR_KINDS");
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  for (const Kind& k : kinds) {
    if (only != nullptr && std::strstr(only, k.name) == nullptr) continue;
    for (CUpti_ActivityKind a : k.kinds) cuptiActivityEnable(a);
  }
  std::atexit(&AtExit);
  return 1;
}
