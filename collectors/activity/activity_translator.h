// ActivityTranslator: turns CUPTI activity records (CUDA 13.0 layouts: Kernel10, Memcpy6,
// MemcpyPtoP4, Memset4, Synchronization2, API, Marker2, MarkerData2, Overhead3, Device5,
// Context3, GraphTrace2, Memory4, MemoryPool3) into warpscope records. Pure: it reads the structs
// only, so unit tests feed it synthetic records on a machine without a GPU. Not thread-safe.
#ifndef WARPSCOPE_COLLECTORS_ACTIVITY_ACTIVITY_TRANSLATOR_H_
#define WARPSCOPE_COLLECTORS_ACTIVITY_ACTIVITY_TRANSLATOR_H_

#include <cupti_activity.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "collectors/activity/kernel_names.h"
#include "collectors/common/record_sink.h"
#include "collectors/nvtx/nvtx_range_builder.h"

namespace warpscope {

struct TranslatorCounters {
  uint64_t kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t syncs = 0;
  uint64_t api_calls = 0;
  uint64_t nvtx = 0;
  uint64_t overheads = 0;
  uint64_t graph_launches = 0;
  uint64_t memory_events = 0;  // MEMORY2 and MEMORY_POOL records
  uint64_t devices = 0;
  uint64_t contexts = 0;
  uint64_t zero_timestamps = 0;  // start == end == 0: CUPTI ran out of device buffers
  uint64_t unknown_kinds = 0;
  uint64_t write_failures = 0;   // the writer dropped the record (its own counters say why)
  uint64_t api_calls_filtered = 0;  // trivial runtime queries not written (IsTrivialRuntimeApi)
  // Runtime launch calls not written: the launch log stands for them (set_launch_calls_elsewhere)
  uint64_t launch_calls_elsewhere = 0;
  uint64_t internal_launches = 0;  // INTERNAL_LAUNCH_API records
};

// Runtime API calls that PyTorch and other frameworks make around every launch and that
// say nothing about performance (cudaGetDevice, cudaGetLastError, cudaStreamIsCapturing,
// ...): hundreds a training step in PyTorch. With the filter on (the default)
// CUPTI is told not to record them (ActivityController), and any record of one that still
// arrives is counted, not written.
std::span<const uint32_t> TrivialRuntimeApis();
bool IsTrivialRuntimeApi(uint32_t cbid);

// The runtime API's kernel and graph launch calls (cudaLaunchKernel, __cudaLaunchKernel,
// cudaLaunchKernelExC, cooperative launches, cudaGraphLaunch, their _ptsz forms). When the
// launch log records them from callbacks, CUPTI is told not to record them as activity.
std::span<const uint32_t> RuntimeLaunchApis();
bool IsRuntimeLaunchApi(uint32_t cbid);

// The API name an INTERNAL_LAUNCH_API record is written with: a launch the driver made
// outside any API function.
inline constexpr const char* kInternalLaunchName = "internal launch";

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (CUPTI's names carry the API version).
std::string ApiDisplayName(const char* cupti_name);

class ActivityTranslator {
 public:
  // Names an API callback id ("cudaLaunchKernel"); the real one asks cuptiGetCallbackName.
  using ApiNameFn = std::function<const char*(bool runtime, uint32_t cbid)>;
  // Fills fields CUPTI's Device5 lacks (opt-in/reserved shared memory per block).
  using DeviceFixupFn = std::function<void(DeviceRecord*)>;

  ActivityTranslator(ApiNameFn api_name, DeviceFixupFn device_fixup)
      : api_name_(std::move(api_name)), device_fixup_(std::move(device_fixup)) {}

  void Translate(const CUpti_Activity* record, RecordSink& sink);
  // Sees every allocation, free and pool record before it is written (the live-block table
  // of the out-of-memory dump); on the translating thread.
  using MemoryObserverFn = std::function<void(const MemoryRecord&)>;
  void set_memory_observer(MemoryObserverFn fn) { memory_observer_ = std::move(fn); }
  void set_filter_trivial_api(bool on) { filter_trivial_api_ = on; }
  // Runtime launch calls are written by the launch log: their activity records, should CUPTI
  // send any, are counted and not written (no launch is written twice).
  void set_launch_calls_elsewhere(bool on) { launch_calls_elsewhere_ = on; }

  const TranslatorCounters& counters() const { return counters_; }
  NvtxRangeBuilder& nvtx() { return nvtx_; }
  const KernelNameCache& names() const { return names_; }

 private:
  void Kernel(const CUpti_ActivityKernel10& k, RecordSink& sink);
  // Each returns false when the sink refused the record (counted by Translate).
  bool ApiCall(const CUpti_ActivityAPI& a, bool runtime, RecordSink& sink);
  bool InternalLaunch(const CUpti_ActivityAPI& a, RecordSink& sink);
  bool Device(const CUpti_ActivityDevice5& d, RecordSink& sink);
  bool Memory(const CUpti_Activity* record, RecordSink& sink);  // MEMORY2, MEMORY_POOL
  uint64_t ApiName(bool runtime, uint32_t cbid, RecordSink& sink);

  ApiNameFn api_name_;
  DeviceFixupFn device_fixup_;
  MemoryObserverFn memory_observer_;
  KernelNameCache names_;
  NvtxRangeBuilder nvtx_;
  TranslatorCounters counters_;
  std::unordered_map<uint64_t, uint64_t> api_names_;  // (runtime << 32 | cbid) -> string id
  std::unordered_set<uint32_t> devices_seen_;
  bool filter_trivial_api_ = true;
  bool launch_calls_elsewhere_ = false;
  uint64_t internal_launch_name_ = 0;
};

// Enum conversions shared with tests.
CopyKind ToCopyKind(uint8_t cupti_copy_kind);
MemoryKind ToMemoryKind(uint32_t cupti_memory_kind);
SyncKind ToSyncKind(uint32_t cupti_sync_type);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_ACTIVITY_ACTIVITY_TRANSLATOR_H_
