// Ranks, labels, time offsets and output shared by the exporters (export_common.h).
#include "analyzers/analyses/export/export_common.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/measures/pm_attribution.h"
#include "analyzers/render/output.h"
#include "proto/settings/setting_error.h"

namespace warpscope {

std::vector<ExportedTrace> PrepareExport(std::span<const TraceModel* const> models) {
  std::vector<ExportedTrace> out;
  bool all_have_wall_clock = true;
  uint64_t earliest = std::numeric_limits<uint64_t>::max();
  for (const TraceModel* model : models) {
    all_have_wall_clock &= model->header.unix_time_base_ns != 0;
    earliest = std::min(earliest, model->header.unix_time_base_ns);
  }
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < models.size(); ++i) {
    const TraceModel& m = *models[i];
    ExportedTrace t;
    t.model = &m;
    t.rank = HeaderRank(m.header).value_or(static_cast<int64_t>(i));
    if (all_have_wall_clock) t.offset_ns = m.header.unix_time_base_ns - earliest;
    ranks.push_back(t.rank);
    out.push_back(std::move(t));
  }
  // Ranks name processes and files: when two traces claim one rank, positions are used.
  std::sort(ranks.begin(), ranks.end());
  const bool ranks_unique = std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end();
  for (size_t i = 0; i < out.size(); ++i) {
    ExportedTrace& t = out[i];
    if (!ranks_unique) t.rank = static_cast<int64_t>(i);
    const TraceHeader& h = t.model->header;
    t.label = absl::StrCat("rank ", t.rank, ": ", h.hostname.empty() ? "unknown host" : h.hostname,
                           " (pid ", h.pid, ")");
  }
  return out;
}

std::string TraceEventMicros(uint64_t ns) {
  // "%u.%03u" without a format string: this runs twice per exported event.
  char buffer[32];
  char* end = std::to_chars(buffer, buffer + 24, ns / 1000).ptr;
  const uint64_t fraction = ns % 1000;
  end[0] = '.';
  end[1] = static_cast<char>('0' + fraction / 100);
  end[2] = static_cast<char>('0' + fraction / 10 % 10);
  end[3] = static_cast<char>('0' + fraction % 10);
  return std::string(buffer, end + 4);
}

FileExportOutput::FileExportOutput(const std::string& path, std::string_view flag)
    : path_(path), flag_(flag) {
  file_ = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) Fail();
}

FileExportOutput::~FileExportOutput() { (void)Finish(); }

void FileExportOutput::Fail() {
  if (status_.ok()) {
    status_ = absl::InternalError(absl::StrCat("cannot write ", flag_, " ", QuoteValue(path_), ": ",
                                               std::strerror(errno)));
  }
}

void FileExportOutput::Write(std::string_view bytes) {
  if (file_ == nullptr || bytes.empty()) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) Fail();
}

absl::Status FileExportOutput::Finish() {
  if (file_ != nullptr) {
    const bool closed = file_ == stdout ? std::fflush(file_) == 0 : std::fclose(file_) == 0;
    if (!closed) Fail();
    file_ = nullptr;
  }
  return status_;
}

std::vector<SlicePlace> StackSlices(std::span<const SliceInterval> slices,
                                    std::vector<uint32_t>* order) {
  order->resize(slices.size());
  for (size_t i = 0; i < slices.size(); ++i) (*order)[i] = static_cast<uint32_t>(i);
  std::stable_sort(order->begin(), order->end(), [&](uint32_t a, uint32_t b) {
    if (slices[a].start_ns != slices[b].start_ns) return slices[a].start_ns < slices[b].start_ns;
    return slices[a].end_ns > slices[b].end_ns;
  });
  std::vector<SlicePlace> places(slices.size());
  std::vector<std::vector<uint64_t>> open_ends;  // per lane, the ends of the open slices
  for (uint32_t i : *order) {
    const SliceInterval& s = slices[i];
    SlicePlace& place = places[i];
    place.lane = kNoLane;
    for (uint32_t lane = 0; lane <= open_ends.size() && lane < kMaxSliceLanes; ++lane) {
      if (lane == open_ends.size()) open_ends.emplace_back();
      std::vector<uint64_t>& ends = open_ends[lane];
      while (!ends.empty() && ends.back() <= s.start_ns) ends.pop_back();
      if (!ends.empty() && ends.back() < s.end_ns) continue;
      place = {lane, static_cast<uint32_t>(ends.size())};
      ends.push_back(s.end_ns);
      break;
    }
  }
  return places;
}

void ForEachPmCounterValue(
    const TraceModel& model,
    const std::function<void(const std::string& name, uint64_t ns, double value)>& emit) {
  auto finite = [&](const std::string& name, uint64_t ns, double value) {
    if (std::isfinite(value)) emit(name, ns, value);
  };
  const ActiveWarpSamples warps = ExtractActiveWarpSamples(PmInputsOf(model));
  for (size_t i = 0; i < warps.samples.size(); ++i) {
    const ActiveWarpSample& s = warps.samples[i];
    const std::string name = absl::StrCat("GPU ", s.device_id, " active warps");
    finite(name, s.start_ns, s.gpu_warps);
    const bool last_on_device = i + 1 == warps.samples.size() ||
                                warps.samples[i + 1].device_id != s.device_id ||
                                warps.samples[i + 1].start_ns > s.end_ns;
    if (last_on_device && std::isfinite(s.gpu_warps)) finite(name, s.end_ns, 0);
  }
  std::map<uint32_t, const PmMetricSet*> sets;
  for (const PmMetricSet& set : model.pm_metric_sets) sets[set.id] = &set;
  for (const PmSample& sample : model.pm_samples) {
    auto it = sets.find(sample.metric_set_id);
    if (it == sets.end()) continue;
    const PmMetricSet& set = *it->second;
    for (size_t v = 0; v < sample.values.size() && v < set.metric_names.size(); ++v) {
      finite(absl::StrCat("GPU ", set.device_id, " ", set.metric_names[v]), sample.start_ns,
             sample.values[v]);
    }
  }
}

HostTids::HostTids(const TraceModel& model) {
  for (const ThreadInfo& thread : model.threads) {
    if (thread.os_tid != 0) os_tid_[thread.id] = thread.os_tid;
  }
}

int64_t HostTids::Of(uint64_t thread_id) const {
  auto it = os_tid_.find(thread_id);
  return it != os_tid_.end() ? it->second : static_cast<int64_t>(thread_id);
}

void WriteCallStackArgs(JsonWriter& json, const TraceModel& model,
                        std::optional<uint64_t> stack_id) {
  const CallStackInfo* stack = stack_id.has_value() ? model.FindCallStack(*stack_id) : nullptr;
  if (stack == nullptr) return;
  json.Key("call_site").String(CallSiteOfStack(model, stack).Display());
  json.Key("stack").BeginArray();
  for (const std::string& line : StackLines(model, *stack)) json.String(line);
  json.EndArray();
}

}  // namespace warpscope
