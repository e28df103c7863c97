// The plain C++ records that collectors hand to the TraceWriter, and the format version the
// writer stamps. The records and the schema's enums are generated from
// proto/warpscope/v1/trace.proto at build time (proto/codegen/record_rules.h says where a
// record differs from its message): absolute timestamps (ns, in the trace's clock domain),
// strings by interned id, no CUPTI or protobuf types.
#ifndef WARPSCOPE_PROTO_WRITER_TRACE_RECORDS_H_
#define WARPSCOPE_PROTO_WRITER_TRACE_RECORDS_H_

#include <cstdint>

#include "warpscope/v1/trace_records.h"

namespace warpscope {

// The format version the writer puts in Header.format_major/minor. Readers refuse a file whose
// major is greater than the kFormatMajor they were built with and accept any minor.
inline constexpr uint32_t kFormatMajor = 1;
inline constexpr uint32_t kFormatMinor = 7;

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_WRITER_TRACE_RECORDS_H_
