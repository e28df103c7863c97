// The builder behind TraceModel::Load, shared by the files that implement it: packets into
// tables (trace_model.cc) and the import problems it counts (trace_model_problems.cc).
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_BUILDER_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_BUILDER_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "analyzers/model/pm_counter_data.h"
#include "analyzers/model/trace_model.h"

namespace warpscope {

// Friend of TraceModel: builds one while the reader streams packets.
class TraceModelBuilder {
 public:
  TraceModelBuilder(TraceReader& reader, const TraceModelOptions& options)
      : reader_(reader), options_(options) {
    model_.strings_ = reader.shared_strings();
    model_.launch_configs_ = std::make_unique<std::deque<LaunchConfig>>();
  }

  absl::StatusOr<TraceModel> Build();

 private:
  void CopyHeader(const v1::Header& h);
  void CountReaderProblems();
  void CountModelProblems();
  void CountValuesOutOfRange();
  void Add(const v1::TracePacket& p);
  void AddEvent(const v1::TracePacket& p);
  void AddDevice(const v1::Device& d);
  void AddKernel(const v1::KernelEvent& k);
  void AddMemcpy(const v1::MemcpyEvent& c);
  void AddMemset(const v1::MemsetEvent& s);
  void AddPmSample(const v1::PmSample& s);
  void AddPcStallReasons(const v1::PcStallReasons& r);
  void AddPcSamples(const v1::PcSampleBatch& b);
  void AddCaptureWindowEdge(const v1::CaptureWindowEdge& e);
  void AddStats(const v1::Stats& s);
  void Extend(uint64_t begin, uint64_t end) {
    if (end < begin) {  // start + duration wrapped around: corrupt values (EndOverflows)
      ++overflowing_end_events_;
      end = begin;
    }
    if (model_.span.empty) {
      model_.span = {begin, end, false};
      return;
    }
    model_.span.begin_ns = std::min(model_.span.begin_ns, begin);
    model_.span.end_ns = std::max(model_.span.end_ns, end);
  }
  std::string_view Str(uint64_t id) const { return model_.strings_->Get(id); }
  const LaunchConfig* Launch(uint64_t id);
  void AddPcRecords(const v1::PcSampleBatch& b, PcSampleBatch& o);
  void Count(const std::string& name, uint64_t value, v1::Severity severity,
             std::string description) {
    if (value == 0) return;
    model_.import_counters.push_back({name, value, severity, std::move(description)});
  }

  TraceReader& reader_;
  TraceModelOptions options_;
  TraceModel model_;
  std::unordered_map<uint64_t, const LaunchConfig*> launch_by_id_;
  std::unordered_map<uint32_t, size_t> window_by_id_;
  uint64_t unmatched_window_ends_ = 0;
  uint64_t orphan_pc_continuations_ = 0;
  uint64_t pc_stall_reason_length_mismatches_ = 0;
  // Cubins arriving in parts (CubinImage.offset/total_bytes): bytes so far, by CRC.
  struct PartialCubin {
    std::string bytes;
    uint64_t total = 0;
  };
  std::map<uint64_t, PartialCubin> partial_cubins_;
  uint64_t incomplete_cubins_ = 0;
  void AddCubinPart(const v1::CubinImage& c);
  uint64_t samples_without_set_ = 0;
  PmCounterDataImporter pm_counter_data_;
  uint64_t sample_value_mismatches_ = 0;
  uint64_t overflowing_end_events_ = 0;
  // Definitions by id as written, to count those written again with another value.
  template <typename Message>
  static bool Redefines(std::unordered_map<uint64_t, std::string>& seen, uint64_t id,
                        const Message& m) {
    auto [it, inserted] = seen.try_emplace(id, m.SerializeAsString());
    return !inserted && it->second != m.SerializeAsString();
  }
  std::unordered_map<uint64_t, std::string> device_bytes_, context_bytes_, metric_set_bytes_;
  uint64_t redefined_devices_ = 0, redefined_contexts_ = 0, redefined_metric_sets_ = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_BUILDER_H_
