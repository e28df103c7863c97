// Parts of TraceColumns::Decode shared by trace_columns.cc and trace_columns_samples.cc.
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_COLUMNS_INTERNAL_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_COLUMNS_INTERNAL_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzers/model/trace_columns.h"

namespace warpscope::columns_internal {

// How a column is derived from its packet's fields.
enum class Derive : uint8_t {
  kInt,     // the field as int64
  kEnd,     // start_ns + duration_ns
  kBool,    // the field as 0 / 1
  kEnum,    // the field's int32 value (`aux` names the enum)
  kString,  // the interned string in force for the id in the field
  kThread,  // three columns: the id, the os_tid and the name of the thread in force
  kLaunch,  // a field (`aux`) of the launch configuration in force for launch_config_id
};

struct ColumnSpec {
  const char* column;
  Derive derive;
  const char* field;          // of the event message; kLaunch: of LaunchConfig
  const char* aux = nullptr;  // kEnum: the enum; kThread: os_tid column, then name column
  const char* aux2 = nullptr;
};

struct TableSpec {
  const char* frame;
  int packet_field;  // the TracePacket member
  std::vector<ColumnSpec> columns;
};

// The frames of the large tables and their columns, in docs/python.md's order.
const std::vector<TableSpec>& EventTables();

// The packets that are not events of the large tables, parsed: the small tables as
// TraceModel builds them (docs/python.md, *Two readers, one result*), the stats, the end of
// the trace and, at Finish, the import counters.
class SampleDecoder {
 public:
  SampleDecoder(TraceReader& reader, TraceColumns& out) : reader_(reader), out_(out) {}
  void Add(const v1::TracePacket& packet);
  void Finish();

 private:
  void AddDevice(const v1::Device& d);
  void AddPmSample(const v1::PmSample& s);
  void AddPcStallReasons(const v1::PcStallReasons& r);
  void AddPcSamples(const v1::PcSampleBatch& b);
  void AddCaptureWindowEdge(const v1::CaptureWindowEdge& e);
  void AddCubinPart(const v1::CubinImage& c);
  void Count(const char* name, uint64_t value) {
    if (value != 0) out_.import_counters.push_back({name, value, v1::SEVERITY_INFO, {}});
  }

  TraceReader& reader_;
  TraceColumns& out_;
  // Definitions by id as written, to count those written again with another value.
  std::unordered_map<uint64_t, std::string> device_bytes_, context_bytes_, metric_set_bytes_;
  uint64_t redefined_devices_ = 0, redefined_contexts_ = 0, redefined_metric_sets_ = 0;
  uint64_t samples_without_set_ = 0, sample_value_mismatches_ = 0;
  uint64_t pc_stall_reason_length_mismatches_ = 0, orphan_pc_continuations_ = 0;
  std::unordered_map<uint32_t, size_t> window_by_id_;
  uint64_t unmatched_window_ends_ = 0;
  // Cubins: only whether each arrived whole matters here (bytes so far, total, by CRC).
  std::set<uint64_t> whole_cubins_;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> partial_cubins_;
};

}  // namespace warpscope::columns_internal

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_COLUMNS_INTERNAL_H_
