// The CUPTI activity API side of the tracer (see cupti_activity.h).
//
// Lifecycle: RegisterTimestampCallback (before any kind is enabled) → set device buffer
// attributes and thread id type → RegisterCallbacks(request, complete) → enable CONTEXT and
// DEVICE → per capture window: enable kinds … disable kinds → periodic FlushAll(0) from the
// session's thread → FlushAll(FORCED) at shutdown → disable everything.
#include "collectors/activity/cupti_activity.h"

#include <cupti.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "collectors/activity/activity_translator.h"
#include "collectors/common/cupti_util.h"
#include "collectors/common/record_sink.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {
namespace {

std::atomic<bool> g_accepting{false};  // completed buffers are translated only while true
std::atomic<bool> g_abandoned{false};
TraceWriter* g_writer = nullptr;
ActivityOptions g_options;
std::mutex g_translate_mu;
ActivityTranslator* g_translator = nullptr;  // guarded by g_translate_mu; never freed
std::atomic<uint64_t> g_buffers{0};
std::atomic<uint64_t> g_records{0};
std::atomic<uint64_t> g_buffer_bytes_used_max{0};
std::atomic<uint64_t> g_dropped_total{0};
std::atomic<bool> g_enabled{false};

// opt-in / reserved shared memory per block, queried from the session's thread.
std::mutex g_device_mu;
std::map<uint32_t, std::pair<uint64_t, uint64_t>> g_device_smem;

std::atomic<bool> g_monotonic{false};

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t CUPTIAPI TimestampCallback() { return MonotonicNs(); }

// Activity buffers come from mmap and go back to a small pool: malloc would keep the freed
// 8 MB blocks in per-thread arenas (seen: +180 MB RSS in a PyTorch run), while pooled
// buffers stay bounded and already faulted in.
constexpr size_t kMaxPooledBuffers = 4;
std::mutex g_pool_mu;
std::vector<uint8_t*> g_pool;  // buffers of g_options.buffer_bytes
std::atomic<uint64_t> g_buffers_allocated{0};

uint8_t* AllocateBuffer() {
  {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (!g_pool.empty()) {
      uint8_t* b = g_pool.back();
      g_pool.pop_back();
      return b;
    }
  }
  void* p = mmap(nullptr, g_options.buffer_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  g_buffers_allocated.fetch_add(1, std::memory_order_relaxed);
  return static_cast<uint8_t*>(p);
}

void ReleaseBuffer(uint8_t* buffer) {
  {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (g_pool.size() < kMaxPooledBuffers) {
      g_pool.push_back(buffer);
      return;
    }
  }
  munmap(buffer, g_options.buffer_bytes);
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = AllocateBuffer();  // page-aligned, so 8-byte aligned
  *size = *buffer ? g_options.buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (buffer == nullptr) return;
  if (valid > 0 && g_accepting.load(std::memory_order_acquire) && !g_abandoned.load()) {
    try {
      std::lock_guard<std::mutex> lock(g_translate_mu);
      BatchSink sink(*g_writer);
      CUpti_Activity* record = nullptr;
      uint64_t n = 0;
      while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        g_translator->Translate(record, sink);
        ++n;
      }
      g_records.fetch_add(n, std::memory_order_relaxed);
      g_buffers.fetch_add(1, std::memory_order_relaxed);
      uint64_t prev = g_buffer_bytes_used_max.load();
      while (valid > prev && !g_buffer_bytes_used_max.compare_exchange_weak(prev, valid)) {
      }
    } catch (...) {
      // Never let an exception into CUPTI; the records of this buffer are lost and counted.
      if (g_writer) g_writer->AddToCounter("activity.buffers_lost", 1, Severity::kDataLoss);
    }
  }
  ReleaseBuffer(buffer);
}

const char* ApiName(bool runtime, uint32_t cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                           cbid, &name) != CUPTI_SUCCESS) {
    return nullptr;
  }
  return name;
}

void DeviceFixup(DeviceRecord* r) {
  std::lock_guard<std::mutex> lock(g_device_mu);
  auto it = g_device_smem.find(r->id);
  if (it != g_device_smem.end()) {
    r->max_shared_memory_per_block_optin = it->second.first;
    r->reserved_shared_memory_per_block = it->second.second;
  }
}

std::vector<CUpti_ActivityKind> WindowKinds(const ActivityOptions& o) {
  const TraceKinds& k = o.kinds;
  std::vector<CUpti_ActivityKind> kinds;
  if (k.kernel && !o.kernels_always_on) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (k.memory) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY2);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  }
  if (k.runtime) kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
  if (k.driver) kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
  if (k.nvtx) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER);       // MARKER before MARKER_DATA
    kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  }
  if (k.sync) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (k.overhead) kinds.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
  if (k.graph) kinds.push_back(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  return kinds;
}

void CollectDropped() {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    g_dropped_total.fetch_add(dropped);
    if (g_writer) g_writer->AddToCounter("cupti.dropped_records", dropped, Severity::kDataLoss);
  }
}

}  // namespace

void SetTraceClock(bool monotonic) { g_monotonic.store(monotonic); }

uint64_t TraceClockNs() {
  if (g_monotonic.load(std::memory_order_relaxed)) return MonotonicNs();
  uint64_t ts = 0;
  if (cuptiGetTimestamp(&ts) != CUPTI_SUCCESS) {
    timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    ts = static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
  }
  return ts;
}

bool CuptiActivity::Init(const ActivityOptions& options, TraceWriter* writer,
                         std::string* error) {
  g_options = options;
  g_writer = writer;
  g_translator = new ActivityTranslator(&ApiName, &DeviceFixup);
  g_translator->set_filter_trivial_api(options.filter_trivial_api);
  if (!options.suppress_nvtx_name.empty()) {
    g_translator->nvtx().SuppressRange(options.suppress_nvtx_name, options.suppress_nvtx_domain);
  }
  // The timestamp callback must be registered before any kind is enabled. It costs about
  // 0.3 us per record on the H200 machine (docs/record.md), so it is opt-in.
  CUptiResult r = CUPTI_SUCCESS;
  if (options.monotonic_clock) {
    r = cuptiActivityRegisterTimestampCallback(&TimestampCallback);
    if (r != CUPTI_SUCCESS) {
      *error = "warpscope: cuptiActivityRegisterTimestampCallback failed: " + CuptiErrorText(r);
      return false;
    }
  }
  size_t device_bytes = options.device_buffer_bytes;
  size_t value_size = sizeof(device_bytes);
  if (device_bytes != 0) {
    r = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &value_size, &device_bytes);
  }
  if (r != CUPTI_SUCCESS) {
    std::fprintf(stderr, "warpscope: cannot set the CUPTI device buffer size: %s\n",
                 CuptiErrorText(r).c_str());
  }
  if (options.device_buffer_pool) {
    size_t pool = options.device_buffer_pool;
    size_t pool_size = sizeof(pool);
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, &pool_size, &pool);
  }
  cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  r = cuptiActivityRegisterCallbacks(&BufferRequested, &BufferCompleted);
  if (r != CUPTI_SUCCESS) {
    *error = "warpscope: cuptiActivityRegisterCallbacks failed: " + CuptiErrorText(r);
    return false;
  }
  g_accepting.store(true, std::memory_order_release);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  if (options.kinds.kernel && options.kernels_always_on) {
    // On failure the windows enable kernel records as usual.
    if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
      g_options.kernels_always_on = false;
    }
  }
  return true;
}

bool CuptiActivity::SetEnabled(bool enabled, std::string* error) {
  if (g_abandoned.load()) return false;
  bool ok = true;
  for (CUpti_ActivityKind kind : WindowKinds(g_options)) {
    CUptiResult r = enabled ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
    if (r != CUPTI_SUCCESS && error->empty()) {
      *error = std::string("warpscope: cannot ") + (enabled ? "enable" : "disable") +
               " CUPTI activity kind " + std::to_string(static_cast<int>(kind)) + ": " +
               CuptiErrorText(r);
      ok = false;
    }
  }
  g_enabled.store(enabled);
  return ok;
}

void CuptiActivity::Flush(bool forced) {
  if (g_abandoned.load() || !g_accepting.load()) return;
  cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  CollectDropped();
}

void CuptiActivity::Shutdown() {
  if (g_abandoned.load()) return;
  std::string ignored;
  if (g_enabled.load()) SetEnabled(false, &ignored);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONTEXT);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DEVICE);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  CollectDropped();
  PublishCounters();
  g_accepting.store(false, std::memory_order_release);
}

void CuptiActivity::AbandonAfterFork() {
  g_abandoned.store(true);
  g_accepting.store(false);
}

void CuptiActivity::PublishCounters() {
  if (g_writer == nullptr || g_translator == nullptr) return;
  TranslatorCounters c;
  uint64_t unmatched = 0, open_dropped = 0, demangles = 0;
  {
    std::lock_guard<std::mutex> lock(g_translate_mu);
    c = g_translator->counters();
    unmatched = g_translator->nvtx().unmatched_ends();
    open_dropped = g_translator->nvtx().dropped_open() + g_translator->nvtx().open_ranges();
    demangles = g_translator->names().demangle_calls();
  }
  TraceWriter& w = *g_writer;
  w.SetCounter("activity.buffers", g_buffers.load(), Severity::kInfo);
  w.SetCounter("activity.records", g_records.load(), Severity::kInfo);
  w.SetCounter("activity.kernels", c.kernels, Severity::kInfo);
  w.SetCounter("activity.memcpys", c.memcpys, Severity::kInfo);
  w.SetCounter("activity.memsets", c.memsets, Severity::kInfo);
  w.SetCounter("activity.syncs", c.syncs, Severity::kInfo);
  w.SetCounter("activity.api_calls", c.api_calls, Severity::kInfo);
  w.SetCounter("activity.api_calls_filtered", c.api_calls_filtered, Severity::kInfo);
  w.SetCounter("activity.buffers_allocated", g_buffers_allocated.load(), Severity::kInfo);
  w.SetCounter("activity.nvtx_markers", c.nvtx, Severity::kInfo);
  w.SetCounter("activity.kernel_names_demangled", demangles, Severity::kInfo);
  w.SetCounter("activity.buffer_high_water_bytes", g_buffer_bytes_used_max.load(), Severity::kInfo);
  w.SetCounter("cupti.zero_timestamp_records", c.zero_timestamps,
               c.zero_timestamps ? Severity::kDataLoss : Severity::kInfo);
  w.SetCounter("activity.unknown_kinds", c.unknown_kinds, Severity::kInfo);
  w.SetCounter("nvtx.unmatched_ends", unmatched, Severity::kInfo);
  w.SetCounter("nvtx.unclosed_ranges", open_dropped, Severity::kInfo);
  w.SetCounter("cupti.dropped_records_total", g_dropped_total.load(),
               g_dropped_total.load() ? Severity::kDataLoss : Severity::kInfo);
}

// Called from the session's own thread (never inside a CUPTI callback): the two limits
// Device5 lacks, through the driver the process already loaded (no link-time dependency).
void QueryDeviceSharedMemoryLimits(uint32_t device) {
  using GetAttr = int (*)(int*, int, int);
  static GetAttr get_attr = [] {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return cuda ? reinterpret_cast<GetAttr>(dlsym(cuda, "cuDeviceGetAttribute")) : nullptr;
  }();
  if (get_attr == nullptr) return;
  int optin = 0, reserved = 0;
  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  // CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK = 111 (cuda.h).
  if (get_attr(&optin, 97, static_cast<int>(device)) != 0) optin = 0;
  if (get_attr(&reserved, 111, static_cast<int>(device)) != 0) reserved = 0;
  std::lock_guard<std::mutex> lock(g_device_mu);
  g_device_smem[device] = {static_cast<uint64_t>(optin), static_cast<uint64_t>(reserved)};
}

}  // namespace warpscope
