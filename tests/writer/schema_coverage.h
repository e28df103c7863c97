// The schema-coverage check of writer_every_record_test: every field of every message a Trace
// reaches in trace.proto is set somewhere in the trace EveryRecordTypeFieldByField writes, but
// for the few listed with their reason, and the writer wrote nothing the schema lacks. Included
// by that test only.
#ifndef WARPSCOPE_TESTS_WRITER_SCHEMA_COVERAGE_H_
#define WARPSCOPE_TESTS_WRITER_SCHEMA_COVERAGE_H_

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "tests/writer/writer_test_support.h"

namespace warpscope {
namespace writer_test {

// Fields of trace.proto that the trace of EveryRecordTypeFieldByField does not hold, and why.
// Every other field of every message a Trace reaches must be in it.
inline constexpr std::pair<std::string_view, std::string_view> kFieldsNotInEveryRecordTrace[] = {
    {"warpscope.v1.Header.time_base_ns",
     "0 there, so that timestamps reach 2^64-1; HeaderFirstStatsThenEndOfTraceLast has it"},
    {"warpscope.v1.PcSampleBatch.continuation",
     "only in later parts of a split batch; LargePcSampleBatchIsSplitAcrossPackets has it"},
    {"warpscope.v1.CubinImage.offset",
     "only in later parts of a split cubin; "
     "CubinLargerThanAChunkIsStoredInPartsThatJoinToTheImage has it"},
};

// The fields set (non-zero, non-empty) anywhere in `message`, and any field number or wire
// type the schema does not know: what the writer wrote that a reader would skip.
inline void CollectWrittenFields(const google::protobuf::Message& message,
                          std::set<const google::protobuf::FieldDescriptor*>* written,
                          std::vector<std::string>* unknown) {
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  if (!reflection.GetUnknownFields(message).empty()) {
    unknown->push_back(message.GetDescriptor()->full_name());
  }
  std::vector<const google::protobuf::FieldDescriptor*> set_fields;
  reflection.ListFields(message, &set_fields);
  for (const google::protobuf::FieldDescriptor* field : set_fields) {
    written->insert(field);
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (!field->is_repeated()) {
      CollectWrittenFields(reflection.GetMessage(message, field), written, unknown);
      continue;
    }
    for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
      CollectWrittenFields(reflection.GetRepeatedMessage(message, field, i), written, unknown);
    }
  }
}

// Every field of `message` and of the messages it reaches.
inline void CollectSchemaFields(const google::protobuf::Descriptor& message,
                         std::set<const google::protobuf::FieldDescriptor*>* fields) {
  for (int i = 0; i < message.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = message.field(i);
    if (!fields->insert(field).second) continue;
    if (field->message_type() != nullptr) CollectSchemaFields(*field->message_type(), fields);
  }
}

// Fails for each schema field the trace lacks (the writer does not write it, or writes it
// under another number) unless kFieldsNotInEveryRecordTrace lists it, for each listed field
// the trace has after all, and for each message holding fields the schema does not know.
inline void ExpectSchemaAndWriterAgree(const pb::Trace& trace) {
  std::set<const google::protobuf::FieldDescriptor*> written, schema;
  std::vector<std::string> unknown;
  CollectWrittenFields(trace, &written, &unknown);
  CollectSchemaFields(*pb::Trace::descriptor(), &schema);
  EXPECT_THAT(unknown, ::testing::IsEmpty())
      << "the writer wrote fields these messages of trace.proto do not have (or with another "
         "wire type)";
  std::set<std::string_view> listed;
  for (const auto& [name, why] : kFieldsNotInEveryRecordTrace) {
    listed.insert(name);
    EXPECT_NE(pb::Trace::descriptor()->file()->pool()->FindFieldByName(std::string(name)),
              nullptr)
        << name << " is listed in kFieldsNotInEveryRecordTrace but is not in trace.proto";
  }
  for (const google::protobuf::FieldDescriptor* field : schema) {
    const bool in_trace = written.count(field) != 0;
    const bool is_listed = listed.count(field->full_name()) != 0;
    EXPECT_TRUE(in_trace || is_listed)
        << field->full_name() << " (field " << field->number() << ") of trace.proto is not in "
        << "the trace: encode it in proto/writer/record_writers.cc with its generated constant "
        << "and give it a non-zero value in EveryRecordTypeFieldByField, or list it in "
        << "kFieldsNotInEveryRecordTrace with the reason";
    EXPECT_FALSE(in_trace && is_listed)
        << field->full_name() << " is in the trace now: remove it from "
        << "kFieldsNotInEveryRecordTrace";
  }
}

}  // namespace writer_test
}  // namespace warpscope

#endif  // WARPSCOPE_TESTS_WRITER_SCHEMA_COVERAGE_H_
