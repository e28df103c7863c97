// What the schema alone does not say about the writer's plain C++ records: which messages are
// records and under what name, and the few fields whose record member is not a plain copy of
// the message field. Everything else follows from trace.proto (record_code.cc): one member per
// field, same name, same order, the field's C++ type, encoded with the field's wire type.
#ifndef WARPSCOPE_PROTO_CODEGEN_RECORD_RULES_H_
#define WARPSCOPE_PROTO_CODEGEN_RECORD_RULES_H_

#include <string_view>

namespace warpscope::codegen {

// What the generator writes for a record besides its struct.
enum class Emit {
  kWrite,        // The encoder and TraceWriter::Batch::Write(const Record&).
  kEncoderOnly,  // The encoder; the writer calls it itself (Open, interning, nesting).
  kStructOnly,   // Its Batch::Write is hand-written in proto/writer/record_writers.cc.
};

struct RecordRule {
  std::string_view message;  // in trace.proto
  std::string_view record;   // the struct collectors fill
  Emit emit;
  std::string_view comment;  // above the struct, for what the message comment does not say
};

// Messages that are records, in any order (structs follow the schema's order).
inline constexpr RecordRule kRecords[] = {
    {"Header", "HeaderRecord", Emit::kEncoderOnly, "TraceWriter::Open writes it."},
    {"Device", "DeviceRecord", Emit::kWrite, ""},
    {"ContextInfo", "ContextRecord", Emit::kWrite, ""},
    {"LaunchConfig", "LaunchConfigRecord", Emit::kEncoderOnly,
     "Interned by the writer (TraceWriter::InternLaunchConfig); equal configs share one id."},
    {"KernelEvent", "KernelRecord", Emit::kWrite, ""},
    {"MemcpyEvent", "MemcpyRecord", Emit::kWrite, ""},
    {"MemsetEvent", "MemsetRecord", Emit::kWrite, ""},
    {"MemoryEvent", "MemoryRecord", Emit::kWrite, ""},
    {"SyncEvent", "SyncRecord", Emit::kWrite, ""},
    {"ApiCallEvent", "ApiCallRecord", Emit::kWrite, ""},
    {"GraphLaunchEvent", "GraphLaunchRecord", Emit::kWrite, ""},
    {"OverheadEvent", "OverheadRecord", Emit::kWrite, ""},
    {"NvtxRangeEvent", "NvtxRangeRecord", Emit::kWrite, ""},
    {"NvtxMarkEvent", "NvtxMarkRecord", Emit::kWrite, ""},
    {"NcclCallEvent", "NcclCallRecord", Emit::kWrite, ""},
    {"StackFrame", "StackFrameRecord", Emit::kWrite,
     "Interned by the stacks collector (collectors/stacks/stack_table.h), which gives ids."},
    {"CallStack", "CallStackRecord", Emit::kWrite,
     "Interned by the stacks collector (collectors/stacks/stack_table.h), which gives ids."},
    {"ApiStackEvent", "ApiStackRecord", Emit::kWrite, ""},
    {"PmMetricSet", "PmMetricSetRecord", Emit::kWrite, ""},
    {"PmCounterData", "PmCounterDataRecord", Emit::kStructOnly,
     "Raw PM samples: a counter data image and its usable samples; the analyzers evaluate "
     "them. The writer encodes the samples of which all three vectors have an entry."},
    {"PmSample", "PmSampleRecord", Emit::kWrite,
     "Collectors reuse one values vector; the writer copies nothing."},
    {"PcStallReasons", "PcStallReasonsRecord", Emit::kWrite, ""},
    {"PcSampleRecord", "PcSampleRecord", Emit::kEncoderOnly, ""},
    {"PcSampleBatch", "PcSampleBatchRecord", Emit::kStructOnly,
     "The writer splits a batch larger than a chunk over several packets."},
    {"CubinImage", "CubinImageRecord", Emit::kStructOnly,
     "A module's binary as CUPTI handed it over at module load; the writer splits one larger "
     "than a chunk into parts."},
    {"CaptureWindowEdge", "CaptureWindowEdgeRecord", Emit::kWrite, ""},
};

// How a record member differs from its message field.
enum class FieldRule {
  // Not in the record: the writer knows it (a constant, an id it gives, a part of a split
  // message) and passes it to the encoder as an argument.
  kWriterValue,
  // `bytes` the record does not own: std::span<const uint8_t>, copied while encoding.
  kBytesView,
  // `bytes` as a pointer and a size (members `<field>` and `size`), copied while encoding.
  kPointerAndSize,
};

struct FieldException {
  std::string_view field;  // Message.field
  FieldRule rule;
};

// Besides these, two rules hold by field name in every record (times are relative to
// Header.time_base_ns in the file, absolute in records):
//  - `start_ns` with `duration_ns`: the record holds absolute `start_ns` and `end_ns`; the
//    writer passes the encoder start_ns - time_base_ns and end_ns - start_ns (repeated ones
//    alike, element by element);
//  - `timestamp_ns`: the record holds it absolute; the writer passes it relative.
inline constexpr FieldException kFieldExceptions[] = {
    {"Header.format_major", FieldRule::kWriterValue},  // kFormatMajor
    {"Header.format_minor", FieldRule::kWriterValue},  // kFormatMinor
    {"LaunchConfig.id", FieldRule::kWriterValue},      // the interned id
    {"PmCounterData.image", FieldRule::kBytesView},    // the decoder's buffer
    {"PcSampleBatch.continuation", FieldRule::kWriterValue},  // later parts of a split batch
    {"CubinImage.image", FieldRule::kPointerAndSize},  // CUPTI's buffer, valid in the callback
    {"CubinImage.offset", FieldRule::kWriterValue},       // parts of a split cubin
    {"CubinImage.total_bytes", FieldRule::kWriterValue},  // the record's size
};

}  // namespace warpscope::codegen

#endif  // WARPSCOPE_PROTO_CODEGEN_RECORD_RULES_H_
