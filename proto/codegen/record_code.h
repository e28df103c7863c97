// The writer's code generated from trace.proto and the rules of record_rules.h: the plain C++
// records and enums (trace_records.h), one encoder per message (trace_encoders.h), and
// TraceWriter::Batch::Write for each record that needs no hand-written code
// (trace_record_writers.cc).
#ifndef WARPSCOPE_PROTO_CODEGEN_RECORD_CODE_H_
#define WARPSCOPE_PROTO_CODEGEN_RECORD_CODE_H_

#include <google/protobuf/descriptor.h>

#include <string>

namespace warpscope::codegen {

// Each returns false with *error set when the schema holds something the rules do not cover.
bool GenerateRecords(const google::protobuf::FileDescriptor& file, std::string* text,
                     std::string* error);
bool GenerateEncoders(const google::protobuf::FileDescriptor& file, std::string* text,
                      std::string* error);
bool GenerateRecordWriters(const google::protobuf::FileDescriptor& file, std::string* text,
                           std::string* error);

}  // namespace warpscope::codegen

#endif  // WARPSCOPE_PROTO_CODEGEN_RECORD_CODE_H_
