// The builder behind TraceModel::Load, shared by the files that implement it: packets into
// tables (trace_model.cc) and the import problems it counts (trace_model_problems.cc).
#ifndef WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_BUILDER_H_
#define WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_BUILDER_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "analyzers/model/import_counters.h"
#include "analyzers/model/pm_counter_data.h"
#include "analyzers/model/trace_model.h"
#include "analyzers/model/trace_model_samples.h"

namespace warpscope {

// The kind of a packet that holds one timed event and nothing else, read from its first bytes
// without parsing it; nullopt for any other packet.
std::optional<EventKind> SoleEventKind(std::string_view payload);

// Friend of TraceModel: builds one while the reader streams packets.
class TraceModelBuilder {
 public:
  TraceModelBuilder(TraceReader& reader, const TraceModelOptions& options)
      : reader_(reader),
        options_(options),
        samples_({model_.devices, model_.contexts, model_.pm_metric_sets, model_.pm_samples,
                  model_.pc_stall_reasons, model_.pc_sample_batches, model_.capture_windows,
                  &model_.cubins},
                 {options.keep_pc_sample_records, options.keep_pm_samples,
                  options.pm_samples_sink, options.pc_records_sink}) {
    model_.strings_ = reader.shared_strings();
    model_.launch_configs_ = std::make_unique<std::deque<LaunchConfig>>();
  }

  // Sizes the kept event tables from `counting`, another reader of the same file, just opened.
  void Reserve(TraceReader& counting);
  absl::StatusOr<TraceModel> Build();

 private:
  void CopyHeader(const v1::Header& h);
  void CountModelProblems();
  void CountValuesOutOfRange();
  void Add(const v1::TracePacket& p);
  void AddEvent(const v1::TracePacket& p);
  // The common events straight from the packet's bytes (event_fields.h), with the references
  // the reader would check; false for any packet it does not decode (then it is parsed).
  bool TryAddDecoded(std::string_view payload);
  // The Add* of the common events take the parsed message or its decoded fields.
  template <typename K>
  void AddKernel(const K& k);
  template <typename C>
  void AddMemcpy(const C& c);
  template <typename S>
  void AddMemset(const S& s);
  template <typename S>
  void AddSync(const S& s);
  template <typename A>
  void AddApiCall(const A& a);
  void AddGraphLaunch(const v1::GraphLaunchEvent& g);
  void AddOverhead(const v1::OverheadEvent& o);
  template <typename R>
  void AddNvtxRange(const R& r);
  void AddNvtxMark(const v1::NvtxMarkEvent& k);
  void AddNcclCall(const v1::NcclCallEvent& n);
  void AddApiStack(const v1::ApiStackEvent& a);
  void AddMemory(const v1::MemoryEvent& e);
  void AddStats(const v1::Stats& s);
  void AddCallStacks();
  // Widens the spans by an event or sample; false when it lies outside the slice (then it
  // is left out, and `span` does not cover it).
  bool Extend(uint64_t begin, uint64_t end) {
    if (end < begin) {  // start + duration wrapped around: corrupt values (EndOverflows)
      ++overflowing_end_events_;
      end = begin;
    }
    Widen(model_.whole_span, begin, end);
    if (options_.slice.has_value() && !options_.slice->Overlaps(begin, end)) return false;
    Widen(model_.span, begin, end);
    return true;
  }
  static void Widen(TimeSpan& span, uint64_t begin, uint64_t end) {
    if (span.empty) {
      span = {begin, end, false};
      return;
    }
    span.begin_ns = std::min(span.begin_ns, begin);
    span.end_ns = std::max(span.end_ns, end);
  }
  // Counts an event and keeps it in its table, hands it to the sink, or both (options_).
  template <typename Event>
  void Deliver(EventKind kind, std::vector<Event>& table, Event event) {
    ++model_.event_counts[static_cast<size_t>(kind)];
    const EventKinds bit = EventKindBit(kind);
    if (options_.sink != nullptr && (options_.sink_events & bit) != 0) options_.sink->Add(event);
    if ((options_.keep_events & bit) != 0) table.push_back(std::move(event));
  }
  std::string_view Str(uint64_t id) const { return model_.strings_->Get(id); }
  const LaunchConfig* Launch(uint64_t id);
  void Count(const StatDef& counter, uint64_t value, std::string meaning = {}) {
    AppendImportCounter(counter, value, &model_.import_counters, std::move(meaning));
  }

  TraceReader& reader_;
  TraceModelOptions options_;
  TraceModel model_;
  // Descriptions and samples, by the rules the columnar decoder shares.
  SampleTableBuilder samples_;
  std::unordered_map<uint64_t, const LaunchConfig*> launch_by_id_;
  PmCounterDataImporter pm_counter_data_;
  uint64_t overflowing_end_events_ = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MODEL_TRACE_MODEL_BUILDER_H_
