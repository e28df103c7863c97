// FakeSink: a RecordSink that keeps every record in memory, for the translator's and the
// API calls recorder's tests. InternThread gives cupti_thread_id + 1000.
#ifndef WARPSCOPE_TESTS_ACTIVITY_FAKE_RECORD_SINK_H_
#define WARPSCOPE_TESTS_ACTIVITY_FAKE_RECORD_SINK_H_

#include <map>
#include <string>
#include <vector>

#include "collectors/common/record_sink.h"

namespace warpscope {

class FakeSink : public RecordSink {
 public:
  uint64_t InternString(std::string_view v) override {
    ++intern_calls;
    auto it = ids.find(std::string(v));
    if (it != ids.end()) return it->second;
    uint64_t id = ids.size() + 1;
    ids[std::string(v)] = id;
    names[id] = std::string(v);
    return id;
  }
  uint64_t InternLaunchConfig(const LaunchConfigRecord& c) override {
    configs.push_back(c);
    return configs.size();
  }
  uint64_t InternThread(uint64_t cupti_thread_id, uint32_t) override { return cupti_thread_id + 1000; }
  bool Write(const DeviceRecord& r) override { devices.push_back(r); return true; }
  bool Write(const ContextRecord& r) override { contexts.push_back(r); return true; }
  bool Write(const KernelRecord& r) override { kernels.push_back(r); return true; }
  bool Write(const MemcpyRecord& r) override { memcpys.push_back(r); return true; }
  bool Write(const MemsetRecord& r) override { memsets.push_back(r); return true; }
  bool Write(const MemoryRecord& r) override { memory.push_back(r); return true; }
  bool Write(const SyncRecord& r) override { syncs.push_back(r); return true; }
  bool Write(const ApiCallRecord& r) override { apis.push_back(r); return true; }
  bool Write(const GraphLaunchRecord& r) override { graphs.push_back(r); return true; }
  bool Write(const OverheadRecord&) override { return true; }
  bool Write(const NvtxRangeRecord& r) override { ranges.push_back(r); return true; }
  bool Write(const NvtxMarkRecord& r) override { marks.push_back(r); return true; }
  bool Write(const ApiStackRecord& r) override { stacks.push_back(r); return true; }

  std::map<std::string, uint64_t> ids;
  std::map<uint64_t, std::string> names;
  int intern_calls = 0;
  std::vector<LaunchConfigRecord> configs;
  std::vector<DeviceRecord> devices;
  std::vector<ContextRecord> contexts;
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<MemoryRecord> memory;
  std::vector<SyncRecord> syncs;
  std::vector<ApiCallRecord> apis;
  std::vector<GraphLaunchRecord> graphs;
  std::vector<NvtxRangeRecord> ranges;
  std::vector<NvtxMarkRecord> marks;
  std::vector<ApiStackRecord> stacks;
};

}  // namespace warpscope

#endif  // WARPSCOPE_TESTS_ACTIVITY_FAKE_RECORD_SINK_H_
