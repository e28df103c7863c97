// RecordSink: where translated records go. The injected library writes through a
// TraceWriter::Batch (BatchSink); unit tests use a fake that keeps the records in memory.
#ifndef WARPSCOPE_COLLECTORS_COMMON_RECORD_SINK_H_
#define WARPSCOPE_COLLECTORS_COMMON_RECORD_SINK_H_

#include <cstdint>
#include <string_view>

#include "proto/writer/trace_records.h"
#include "proto/writer/trace_writer.h"

namespace warpscope {

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual uint64_t InternString(std::string_view value) = 0;
  virtual uint64_t InternLaunchConfig(const LaunchConfigRecord& config) = 0;
  virtual uint64_t InternThread(uint64_t cupti_thread_id, uint32_t os_tid) = 0;
  virtual bool Write(const DeviceRecord& r) = 0;
  virtual bool Write(const ContextRecord& r) = 0;
  virtual bool Write(const KernelRecord& r) = 0;
  virtual bool Write(const MemcpyRecord& r) = 0;
  virtual bool Write(const MemsetRecord& r) = 0;
  virtual bool Write(const MemoryRecord& r) = 0;
  virtual bool Write(const SyncRecord& r) = 0;
  virtual bool Write(const ApiCallRecord& r) = 0;
  virtual bool Write(const GraphLaunchRecord& r) = 0;
  virtual bool Write(const OverheadRecord& r) = 0;
  virtual bool Write(const NvtxRangeRecord& r) = 0;
  virtual bool Write(const NvtxMarkRecord& r) = 0;
  virtual bool Write(const ApiStackRecord& r) = 0;
};

// Forwards to one TraceWriter::Batch (the writer's lock is held for the batch's lifetime).
class BatchSink final : public RecordSink {
 public:
  explicit BatchSink(TraceWriter& writer) : batch_(writer) {}
  uint64_t InternString(std::string_view value) override { return batch_.InternString(value); }
  uint64_t InternLaunchConfig(const LaunchConfigRecord& c) override {
    return batch_.InternLaunchConfig(c);
  }
  uint64_t InternThread(uint64_t cupti_thread_id, uint32_t os_tid) override {
    return batch_.InternThread(cupti_thread_id, os_tid);
  }
  bool Write(const DeviceRecord& r) override { return batch_.Write(r); }
  bool Write(const ContextRecord& r) override { return batch_.Write(r); }
  bool Write(const KernelRecord& r) override { return batch_.Write(r); }
  bool Write(const MemcpyRecord& r) override { return batch_.Write(r); }
  bool Write(const MemsetRecord& r) override { return batch_.Write(r); }
  bool Write(const MemoryRecord& r) override { return batch_.Write(r); }
  bool Write(const SyncRecord& r) override { return batch_.Write(r); }
  bool Write(const ApiCallRecord& r) override { return batch_.Write(r); }
  bool Write(const GraphLaunchRecord& r) override { return batch_.Write(r); }
  bool Write(const OverheadRecord& r) override { return batch_.Write(r); }
  bool Write(const NvtxRangeRecord& r) override { return batch_.Write(r); }
  bool Write(const NvtxMarkRecord& r) override { return batch_.Write(r); }
  bool Write(const ApiStackRecord& r) override { return batch_.Write(r); }

 private:
  TraceWriter::Batch batch_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_COMMON_RECORD_SINK_H_
