// Reading the JSON exports back in tests (tests/export): parse, look fields and events up,
// and check the trace-event format's rules that viewers rely on.
#ifndef WARPSCOPE_TESTS_EXPORT_TRACE_EVENT_JSON_H_
#define WARPSCOPE_TESTS_EXPORT_TRACE_EVENT_JSON_H_

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analyzers/model/trace_model.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace warpscope::testing {

using ::google::protobuf::ListValue;
using ::google::protobuf::Struct;
using ::google::protobuf::Value;

inline TraceModel Load(const std::string& path) {
  absl::StatusOr<TraceModel> model = TraceModel::Load(path);
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

inline Struct ParseJson(const std::string& json) {
  Struct out;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &out);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json.substr(0, 500);
  return out;
}

inline const Value* Field(const Value& v, const std::string& key) {
  const auto& fields = v.struct_value().fields();
  auto it = fields.find(key);
  return it == fields.end() ? nullptr : &it->second;
}
inline std::string Str(const Value& v, const std::string& key) {
  const Value* f = Field(v, key);
  return f != nullptr ? f->string_value() : "";
}
inline double Num(const Value& v, const std::string& key) {
  const Value* f = Field(v, key);
  return f != nullptr ? f->number_value() : -1;
}
inline double Arg(const Value& v, const std::string& key) {
  const Value* args = Field(v, "args");
  return args != nullptr ? Num(*args, key) : -1;
}
inline bool HasArg(const Value& v, const std::string& key) {
  const Value* args = Field(v, "args");
  return args != nullptr && Field(*args, key) != nullptr;
}

inline std::vector<Value> Events(const Struct& root) {
  auto it = root.fields().find("traceEvents");
  EXPECT_NE(it, root.fields().end());
  if (it == root.fields().end()) return {};
  const ListValue& list = it->second.list_value();
  return {list.values().begin(), list.values().end()};
}

inline std::vector<Value> Select(const std::vector<Value>& events, const std::string& ph,
                                 const std::string& name = "") {
  std::vector<Value> out;
  for (const Value& e : events) {
    if (Str(e, "ph") == ph && (name.empty() || Str(e, "name") == name)) out.push_back(e);
  }
  return out;
}

// The rules of the trace-event format that viewers rely on.
inline void ExpectWellFormed(const std::vector<Value>& events) {
  const std::set<std::string> known = {"X", "b", "e", "i", "s", "f", "C", "M"};
  std::map<std::tuple<double, std::string, double>, int> open_async;  // (pid, cat, id)
  std::map<double, int> flows;                                        // id -> s minus f
  for (const Value& e : events) {
    const std::string ph = Str(e, "ph");
    ASSERT_TRUE(known.count(ph)) << "ph " << ph;
    for (const char* key : {"ph", "ts", "pid", "tid", "name"}) {
      EXPECT_NE(Field(e, key), nullptr) << key << " missing in a " << ph << " event";
    }
    EXPECT_GE(Num(e, "ts"), 0);
    if (ph == "X") {
      EXPECT_GE(Num(e, "dur"), 0) << Str(e, "name");
    }
    if (ph == "b") ++open_async[{Num(e, "pid"), Str(e, "cat"), Num(e, "id")}];
    if (ph == "e") --open_async[{Num(e, "pid"), Str(e, "cat"), Num(e, "id")}];
    if (ph == "s") ++flows[Num(e, "id")];
    if (ph == "f") {
      --flows[Num(e, "id")];
      EXPECT_EQ(Str(e, "bp"), "e");
    }
    if (ph == "C") {
      const Value* args = Field(e, "args");
      ASSERT_NE(args, nullptr);
      ASSERT_FALSE(args->struct_value().fields().empty());
      for (const auto& [key, value] : args->struct_value().fields()) {
        EXPECT_EQ(value.kind_case(), Value::kNumberValue) << key;
      }
    }
  }
  for (const auto& [key, count] : open_async)
    EXPECT_EQ(count, 0) << "async id " << std::get<2>(key);
  for (const auto& [id, count] : flows) EXPECT_EQ(count, 0) << "flow id " << id;
}

}  // namespace warpscope::testing

#endif  // WARPSCOPE_TESTS_EXPORT_TRACE_EVENT_JSON_H_
