// FrameBuilder: one frame of the `warpscope_native` extension built column by column from a
// table of rows, in the column shapes native_frames.h describes (numbers, bools, categorical
// strings, enums).
#ifndef WARPSCOPE_PYTHON_SRC_FRAME_BUILDER_H_
#define WARPSCOPE_PYTHON_SRC_FRAME_BUILDER_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analyzers/model/trace_model.h"
#include "python/src/native_frames.h"

namespace warpscope::native {

// A string column as categorical codes into its sorted distinct values.
class StringColumn {
 public:
  explicit StringColumn(size_t rows) { codes_.reserve(rows); }
  void Add(std::string_view s) {
    auto [it, inserted] = index_.try_emplace(s, static_cast<int32_t>(values_.size()));
    if (inserted) values_.push_back(s);
    codes_.push_back(it->second);
  }
  nanobind::object Finish() {
    // Sorted categories: both readers then give equal categoricals.
    std::vector<int32_t> order(values_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return values_[a] < values_[b]; });
    std::vector<int32_t> rank(values_.size());
    nanobind::list categories;
    for (size_t i = 0; i < order.size(); ++i) {
      rank[order[i]] = static_cast<int32_t>(i);
      categories.append(Utf8(values_[order[i]]));
    }
    for (int32_t& c : codes_) c = rank[c];
    return nanobind::make_tuple("category", Array(std::move(codes_)), categories);
  }

 private:
  std::vector<int32_t> codes_;
  std::vector<std::string_view> values_;
  absl::flat_hash_map<std::string_view, int32_t> index_;
};

// An enum column: the values, named in Python.
inline nanobind::object EnumColumn(std::vector<int32_t>&& values, const char* enum_name) {
  return nanobind::make_tuple("enum", Array(std::move(values)), enum_name);
}

// Builds one frame column by column from a table of events.
template <typename Event>
class FrameBuilder {
 public:
  explicit FrameBuilder(const std::vector<Event>& rows) : rows_(rows) {}

  template <typename F>
  void Int(const char* name, F get) {
    std::vector<int64_t> v(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i) v[i] = static_cast<int64_t>(get(rows_[i]));
    columns_[name] = Array(std::move(v));
  }
  template <typename F>
  void Bool(const char* name, F get) {
    std::vector<uint8_t> v(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i) v[i] = get(rows_[i]) ? 1 : 0;
    columns_[name] = nanobind::make_tuple("bool", Array(std::move(v)));
  }
  template <typename F>
  void String(const char* name, F get) {
    StringColumn c(rows_.size());
    for (const Event& e : rows_) c.Add(get(e));
    columns_[name] = c.Finish();
  }
  template <typename F>
  void Enum(const char* name, const char* enum_name, F get) {
    std::vector<int32_t> v(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i) v[i] = static_cast<int32_t>(get(rows_[i]));
    columns_[name] = EnumColumn(std::move(v), enum_name);
  }
  nanobind::dict Finish() { return std::move(columns_); }

 private:
  const std::vector<Event>& rows_;
  nanobind::dict columns_;
};

}  // namespace warpscope::native

#endif  // WARPSCOPE_PYTHON_SRC_FRAME_BUILDER_H_
