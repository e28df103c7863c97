// SampleTableBuilder: the rules by which descriptions (devices, contexts, PM metric sets) and
// samples (PM, PC, capture windows, cubins) become TraceModel's small tables, and
// CallStackTables, which gives its call stacks. TraceModel::Load (trace_model.cc) and the
// columnar decoder (trace_columns_samples.cc) both apply them, so both readers give the same
// tables and count the same problems.
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_SAMPLES_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_SAMPLES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzers/model/trace_model.h"

namespace warpscope {

// The tables the rules fill: TraceModel's own, or TraceColumns' SampleTables.
struct SampleTableRefs {
  std::vector<DeviceInfo>& devices;
  std::vector<ContextInfo>& contexts;
  std::vector<PmMetricSet>& pm_metric_sets;
  std::vector<PmSample>& pm_samples;
  std::vector<PcStallReasons>& pc_stall_reasons;
  std::vector<PcSampleBatch>& pc_sample_batches;
  std::vector<CaptureWindowRange>& capture_windows;
  // Whole cubins by CRC; nullptr: only whether each arrived whole is kept.
  std::map<uint64_t, std::string>* cubins = nullptr;
};

// The problems the rules count (import counters model.*).
struct SampleTableProblems {
  uint64_t redefined_devices = 0;
  uint64_t redefined_contexts = 0;
  uint64_t redefined_metric_sets = 0;
  uint64_t pm_samples_without_set = 0;
  uint64_t pm_sample_value_mismatches = 0;
  uint64_t pc_stall_reason_length_mismatches = 0;
  uint64_t orphan_pc_continuations = 0;
  uint64_t incomplete_cubins = 0;
  uint64_t unmatched_capture_window_ends = 0;
};

// What the rules keep of the samples (TraceModelOptions of the same names).
struct SampleKeeping {
  bool pc_records = true;  // false: PC sample batches without their records
  bool pm_samples = true;  // false: PM samples only checked and counted
  std::function<void(const PmSample&)> pm_samples_sink;  // each PM sample as it is read
  std::function<void(const PcSampleBatch&)> pc_records_sink;  // each packet's records
};

class SampleTableBuilder {
 public:
  SampleTableBuilder(SampleTableRefs tables, SampleKeeping keeping)
      : t_(tables), keeping_(std::move(keeping)) {}

  // Adds a description or sample packet to the tables; false for a packet of another kind
  // (nothing done). PC records name their functions through `strings`.
  bool Add(const v1::TracePacket& p, const InternedStrings& strings);

  SampleTableProblems Problems() const;
  // The metric sets that PmSample records (values the process evaluated) came for, kept or not.
  const std::set<uint32_t>& pm_sets_with_values() const { return pm_sets_with_values_; }

 private:
  void AddDevice(const v1::Device& d);
  void AddPmSample(const v1::PmSample& s);
  void AddPcStallReasons(const v1::PcStallReasons& r);
  void AddPcSamples(const v1::PcSampleBatch& b, const InternedStrings& strings);
  void AddCaptureWindowEdge(const v1::CaptureWindowEdge& e);
  void AddCubinPart(const v1::CubinImage& c);

  SampleTableRefs t_;
  SampleKeeping keeping_;
  SampleTableProblems problems_;
  // Definitions by id as written, to count those written again with another value.
  std::unordered_map<uint64_t, std::string> device_bytes_, context_bytes_, metric_set_bytes_;
  std::unordered_map<uint32_t, size_t> window_by_id_;
  // Cubins arriving in parts (CubinImage.offset/total_bytes): bytes so far (only their
  // count when t_.cubins is null), and the total expected, by CRC.
  struct PartialCubin {
    std::string bytes;
    uint64_t size = 0;
    uint64_t total = 0;
  };
  std::map<uint64_t, PartialCubin> partial_cubins_;
  std::set<uint64_t> whole_cubins_;
  std::set<uint32_t> pm_sets_with_values_;
};

// The call stacks and their frames that `reader` kept, once it has read the whole trace: the
// last definition of each id, ids ascending, names resolved in the reader's strings; frames a
// stack names that were never defined are left out of it.
void CallStackTables(const TraceReader& reader, std::vector<StackFrameInfo>& frames,
                     std::vector<CallStackInfo>& stacks);

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_SAMPLES_H_
