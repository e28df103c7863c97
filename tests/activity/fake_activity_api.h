// FakeActivityApi: CUPTI's activity API as the activity controller sees it, without a GPU,
// and synthetic CUDA 13.0 activity records to feed it.
#ifndef WARPSCOPE_TESTS_ACTIVITY_FAKE_ACTIVITY_API_H_
#define WARPSCOPE_TESTS_ACTIVITY_FAKE_ACTIVITY_API_H_

#include <cupti_activity.h>
#include <cupti_runtime_cbid.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "collectors/activity/activity_api.h"

namespace warpscope::testing {

// Records are stamped from here on (the tests' Header.time_base_ns).
inline constexpr uint64_t kTimeBase = 1'000'000'000;

// A fake CUPTI activity API. Every call is logged as text ("enable 10", "flush forced"); a
// call named in `fail` returns that code, and ErrorText words it "CUPTI_ERROR_FAKE (code)".
// Emitted records go into buffers requested from the controller, laid out as
// [8-byte padded size][record, padded to 8 bytes], and only while their kind is enabled (as
// CUPTI records only enabled kinds). A buffer is complete once the next record does not fit
// in it; FlushAll hands back the complete buffers, and when forced also the one being filled.
class FakeActivityApi final : public ActivityApi {
 public:
  std::vector<std::string> calls;
  std::vector<std::string> runtime_api_calls;  // EnableRuntimeApi, in order
  bool allocation_source = false;  // EnableAllocationSource's last value
  std::map<std::string, int> fail;
  size_t dropped = 0;         // reported and reset by GetNumDroppedRecords
  bool hold_buffers = false;  // FlushAll hands nothing back (CUPTI still holds them)
  bool throw_in_next_record = false;
  bool driver_loaded = true;
  std::map<uint32_t, SharedMemoryLimits> shared_memory_limits;
  uint64_t buffers_delivered = 0;
  uint64_t records_delivered = 0;
  uint64_t records_not_enabled = 0;

  template <typename CuptiRecord>
  void Emit(const CuptiRecord& record) {
    if constexpr (std::is_same_v<CuptiRecord, CUpti_ActivityAPI>) {
      if (record.kind == CUPTI_ACTIVITY_KIND_RUNTIME && skipped_runtime_apis_.count(record.cbid)) {
        ++records_not_enabled;
        return;
      }
    }
    EmitBytes(&record, sizeof record, static_cast<int>(record.kind));
  }
  // Hands back every buffer, complete or not (CUPTI, on its own thread).
  void DeliverAll() { Deliver(/*also_filling=*/true); }
  size_t complete_buffers() const { return complete_.size(); }
  uint8_t* filling_buffer() const { return filling_.data; }
  std::vector<std::string> CallsStartingWith(std::string_view prefix) const {
    std::vector<std::string> out;
    for (const std::string& c : calls) {
      if (c.rfind(prefix, 0) == 0) out.push_back(c);
    }
    return out;
  }

  ActivityResult RegisterMonotonicTimestampCallback() override {
    return Call("timestamp_callback");
  }
  ActivityResult SetDeviceBufferSize(size_t bytes) override {
    return Call("device_buffer_size " + std::to_string(bytes));
  }
  ActivityResult SetDeviceBufferPoolLimit(size_t buffers) override {
    return Call("device_buffer_pool " + std::to_string(buffers));
  }
  ActivityResult UseSystemThreadIds() override { return Call("system_thread_ids"); }
  // Kept in allocation_source, not calls.
  ActivityResult EnableAllocationSource(bool enable) override {
    allocation_source = enable;
    return {};
  }
  ActivityResult RegisterCallbacks(ActivityBufferHandler* handler) override {
    ActivityResult r = Call("register_callbacks");
    if (r.ok()) handler_ = handler;
    return r;
  }
  ActivityResult Enable(ActivityKind kind) override {
    ActivityResult r = Call("enable " + std::to_string(static_cast<int>(kind)));
    if (r.ok()) enabled_.insert(static_cast<int>(kind));
    if (r.ok() && kind == ActivityKind::kRuntime) skipped_runtime_apis_.clear();
    return r;
  }
  ActivityResult Disable(ActivityKind kind) override {
    ActivityResult r = Call("disable " + std::to_string(static_cast<int>(kind)));
    if (r.ok()) enabled_.erase(static_cast<int>(kind));
    return r;
  }
  // Logged in runtime_api_calls, not calls ("skip 17", "record 17"; "... (runtime off)" when
  // kRuntime was not enabled then); `fail["runtime_api"]` fails every one. Skipped ids are
  // not recorded until kRuntime is enabled again, as with CUPTI.
  ActivityResult EnableRuntimeApi(uint32_t cbid, bool enable) override {
    const bool runtime_on = enabled_.count(static_cast<int>(ActivityKind::kRuntime)) > 0;
    runtime_api_calls.push_back(std::string(enable ? "record " : "skip ") + std::to_string(cbid) +
                                (runtime_on ? "" : " (runtime off)"));
    if (auto it = fail.find("runtime_api"); it != fail.end()) return ActivityResult{it->second};
    if (enable) {
      skipped_runtime_apis_.erase(cbid);
    } else {
      skipped_runtime_apis_.insert(cbid);
    }
    return {};
  }
  ActivityResult FlushAll(bool forced) override {
    ActivityResult r = Call(forced ? "flush forced" : "flush");
    if (r.ok() && !hold_buffers) Deliver(forced);
    now_ns += flush_ns;
    return r;
  }
  ActivityResult GetNumDroppedRecords(size_t* out) override {
    ActivityResult r = Call("dropped");
    if (r.ok()) {
      *out = dropped;
      dropped = 0;
    }
    return r;
  }
  bool NextRecord(uint8_t* buffer, size_t valid_bytes, const void** record) override {
    if (throw_in_next_record) throw std::runtime_error("fake: unreadable record");
    size_t offset = 0;
    if (*record != nullptr) {
      const auto* current = static_cast<const uint8_t*>(*record);
      uint64_t padded = 0;
      std::memcpy(&padded, current - 8, 8);
      offset = static_cast<size_t>(current - buffer) + padded;
    }
    if (offset + 8 > valid_bytes) return false;
    *record = buffer + offset + 8;
    now_ns += record_ns;
    return true;
  }
  const char* CallbackName(bool runtime, uint32_t cbid) override {
    if (runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
      return "cudaLaunchKernel_v7000";
    }
    if (runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020) {
      return "cudaGetDevice_v3020";
    }
    return nullptr;
  }
  std::optional<SharedMemoryLimits> QuerySharedMemoryLimits(uint32_t device) override {
    if (!driver_loaded) return std::nullopt;
    auto it = shared_memory_limits.find(device);
    return it == shared_memory_limits.end() ? SharedMemoryLimits{} : it->second;
  }
  std::string ErrorText(ActivityResult result) override {
    return "CUPTI_ERROR_FAKE (" + std::to_string(result.code) + ")";
  }
  // The clock: each Now() returns now_ns; a FlushAll takes flush_ns of it (after its
  // buffers are back), and reading a record record_ns.
  uint64_t Now() override { return now_ns; }
  uint64_t now_ns = 1'000'000;
  uint64_t flush_ns = 0;
  uint64_t record_ns = 0;

 private:
  struct Buffer {
    uint8_t* data = nullptr;
    size_t size = 0;
    size_t used = 0;
    uint64_t records = 0;
  };

  ActivityResult Call(std::string call) {
    auto it = fail.find(call);
    calls.push_back(std::move(call));
    return ActivityResult{it == fail.end() ? 0 : it->second};
  }

  void EmitBytes(const void* record, size_t bytes, int kind) {
    if (handler_ == nullptr || enabled_.count(kind) == 0) {
      ++records_not_enabled;
      return;
    }
    const size_t padded = (bytes + 7) / 8 * 8;
    const size_t need = 8 + padded;
    if (filling_.data != nullptr && filling_.used + need > filling_.size) {
      complete_.push_back(filling_);
      filling_ = {};
    }
    if (filling_.data == nullptr) {
      size_t max_records = 1;
      handler_->BufferRequested(&filling_.data, &filling_.size, &max_records);
      if (filling_.data == nullptr) {
        ++dropped;  // no buffer: CUPTI drops the record
        return;
      }
      if (filling_.size < need) std::abort();  // the tests use buffers that hold any record
    }
    const uint64_t size_field = padded;
    std::memcpy(filling_.data + filling_.used, &size_field, 8);
    std::memcpy(filling_.data + filling_.used + 8, record, bytes);
    filling_.used += need;
    ++filling_.records;
  }

  void Deliver(bool also_filling) {
    std::vector<Buffer> out;
    out.swap(complete_);
    if (also_filling && filling_.data != nullptr) {
      out.push_back(filling_);
      filling_ = {};
    }
    for (const Buffer& b : out) {
      ++buffers_delivered;
      records_delivered += b.records;
      handler_->BufferCompleted(b.data, b.size, b.used);
    }
  }

  ActivityBufferHandler* handler_ = nullptr;
  std::set<int> enabled_;
  std::set<uint32_t> skipped_runtime_apis_;
  std::vector<Buffer> complete_;
  Buffer filling_;
};

// A CUPTI activity record of type `Record`, zero but for its kind, as the tests fill it.
template <typename Record>
Record ZeroedActivity(CUpti_ActivityKind kind) {
  Record r;
  std::memset(&r, 0, sizeof r);
  r.kind = kind;
  return r;
}

inline CUpti_ActivityKernel10 Kernel(const char* name, uint32_t correlation, uint64_t start) {
  auto k = ZeroedActivity<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = name;
  k.start = kTimeBase + start;
  k.end = kTimeBase + start + 1000;
  k.gridX = 132;
  k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 32;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.correlationId = correlation;
  return k;
}

inline CUpti_ActivityAPI RuntimeApi(uint32_t cbid, uint32_t correlation, uint64_t start) {
  auto a = ZeroedActivity<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  a.cbid = cbid;
  a.start = kTimeBase + start;
  a.end = kTimeBase + start + 500;
  a.threadId = 4242;
  a.correlationId = correlation;
  return a;
}

inline CUpti_ActivityMemcpy6 Memcpy(uint32_t correlation, uint64_t start) {
  auto m = ZeroedActivity<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.bytes = 1 << 20;
  m.start = kTimeBase + start;
  m.end = kTimeBase + start + 2000;
  m.contextId = 1;
  m.streamId = 7;
  m.correlationId = correlation;
  return m;
}

inline CUpti_ActivityDevice5 Device(uint32_t id) {
  auto d = ZeroedActivity<CUpti_ActivityDevice5>(CUPTI_ACTIVITY_KIND_DEVICE);
  d.id = id;
  d.name = "NVIDIA H200";
  d.computeCapabilityMajor = 9;
  d.numMultiprocessors = 132;
  d.maxSharedMemoryPerBlock = 49152;
  return d;
}

inline CUpti_ActivityContext3 Context(uint32_t id, uint32_t device) {
  auto c = ZeroedActivity<CUpti_ActivityContext3>(CUPTI_ACTIVITY_KIND_CONTEXT);
  c.contextId = id;
  c.deviceId = device;
  return c;
}

inline CUpti_ActivityMarker2 Marker(uint32_t flags, uint32_t id, uint64_t ts, const char* name) {
  auto m = ZeroedActivity<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m.flags = static_cast<CUpti_ActivityFlag>(flags);
  m.id = id;
  m.timestamp = kTimeBase + ts;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.threadId = 4242;
  m.name = name;
  return m;
}

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_ACTIVITY_FAKE_ACTIVITY_API_H_
