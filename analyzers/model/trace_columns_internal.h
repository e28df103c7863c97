// Parts of TraceColumns::Decode shared by trace_columns.cc and trace_columns_samples.cc.
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_COLUMNS_INTERNAL_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_COLUMNS_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analyzers/model/trace_columns.h"
#include "analyzers/model/trace_model_samples.h"

namespace warpscope::columns_internal {

// How a column is derived from its packet's fields.
enum class Derive : uint8_t {
  kInt,     // the field as int64
  kSint,    // a sint32 field (zigzag on the wire) as int64
  kEnd,     // start_ns + duration_ns
  kBool,    // the field as 0 / 1
  kEnum,    // the field's int32 value (`aux` names the enum)
  kString,  // the interned string in force for the id in the field
  kStack,   // a CallStack id as int64, counted when that stack is not defined yet
  kThread,  // three columns: the id, the os_tid and the name of the thread in force
  kLaunch,  // a field (`aux`) of the launch configuration in force for launch_config_id
};

// A sint32 field's value from its zigzag varint.
inline int64_t ZigZagDecode(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

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
// Whether `packet` is an event of one of those tables.
bool IsEventPacket(const v1::TracePacket& packet);

// The packets that are not events of the large tables, parsed: the small tables as
// TraceModel builds them (docs/python.md, *Two readers, one result*), the stats, the end of
// the trace and, at Finish, the import counters.
class SampleDecoder {
 public:
  SampleDecoder(TraceReader& reader, TraceColumns& out);
  void Add(const v1::TracePacket& packet);
  void Finish();

 private:
  TraceReader& reader_;
  TraceColumns& out_;
  SampleTableBuilder rules_;
};

}  // namespace warpscope::columns_internal

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_COLUMNS_INTERNAL_H_
