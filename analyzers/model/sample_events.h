// The sampled events of a trace as TraceModel holds them (trace_model.h): PM samples with their
// metric sets, and PC samples with their stall reasons. Units as in trace_model.h.
#ifndef WARPSCOPE_ANALYZERS_MODEL_SAMPLE_EVENTS_H_
#define WARPSCOPE_ANALYZERS_MODEL_SAMPLE_EVENTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warpscope {

struct PmMetricSet {
  uint32_t id = 0;
  uint32_t device_id = 0;
  std::vector<std::string> metric_names;
  uint64_t interval_ns = 0;
  // For raw samples (PmCounterData) evaluated at load time: CUPTI's chip name and the
  // device's counter availability image (bytes). Empty when the process evaluated them.
  std::string chip_name;
  std::string counter_availability;
};

// Hardware counters over [start_ns, end_ns()] on the metric set's device. `values` follows
// the set's metric_names (a sample with a different count is kept and counted as a problem).
struct PmSample {
  uint32_t metric_set_id = 0;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;
  std::vector<double> values;
  // The entry of TraceModel::pm_metric_sets in force when the sample was read (the last
  // definition of its id before it); -1 when none was.
  int64_t metric_set_index = -1;
  uint64_t end_ns() const { return start_ns + duration_ns; }
};

struct PcStallReasons {
  uint32_t device_id = 0;
  std::map<uint32_t, std::string> name_by_index;  // CUPTI stall reason index -> name
};

// Samples at one PC of one function (a PcSampleRecord in the file).
struct PcRecord {
  uint64_t cubin_crc = 0;
  std::string_view function_name;  // mangled
  uint64_t pc_offset = 0;
  std::vector<std::pair<uint32_t, uint64_t>> stall_samples;  // (stall reason index, samples)
  uint32_t correlation_id = 0;
};

// One read of the PC sampling buffer. A batch the writer split over several packets
// (PcSampleBatch.continuation) is one PcSampleBatch here, with all its records.
struct PcSampleBatch {
  uint32_t device_id = 0;
  uint32_t context_id = 0;
  uint64_t timestamp_ns = 0;
  uint64_t total_samples = 0;
  uint64_t dropped_samples = 0;
  uint64_t non_user_kernel_samples = 0;
  bool hardware_buffer_full = false;
  std::vector<PcRecord> records;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_SAMPLE_EVENTS_H_
