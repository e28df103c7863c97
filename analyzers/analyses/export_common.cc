// Ranks, labels, time offsets and launch lookups shared by the exporters (export_common.h).
#include "analyzers/analyses/export_common.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace warpscope {
namespace {

// Variables through which launchers tell a process its rank, in the order they are trusted.
constexpr std::string_view kRankVariables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                               "SLURM_PROCID"};

std::optional<int64_t> RankFromHeader(const TraceHeader& header) {
  for (std::string_view variable : kRankVariables) {
    for (const auto& [name, value] : header.rank_env) {
      int64_t rank = 0;
      if (name == variable && absl::SimpleAtoi(value, &rank) && rank >= 0) return rank;
    }
  }
  return std::nullopt;
}

}  // namespace

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
    t.rank = RankFromHeader(m.header).value_or(static_cast<int64_t>(i));
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
  return absl::StrFormat("%u.%03u", ns / 1000, ns % 1000);
}

std::vector<std::pair<uint32_t, uint32_t>> LaunchCallsByCorrelation(const TraceModel& model) {
  std::vector<std::pair<uint32_t, uint32_t>> table;
  for (size_t i = 0; i < model.api_calls.size(); ++i) {
    const ApiCallEvent& call = model.api_calls[i];
    if (call.correlation_id != 0) table.emplace_back(call.correlation_id, static_cast<uint32_t>(i));
  }
  // Runtime calls first within a correlation id: the call the program made, not the driver
  // call beneath it.
  std::stable_sort(table.begin(), table.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    const bool a_runtime = model.api_calls[a.second].domain == v1::API_DOMAIN_RUNTIME;
    const bool b_runtime = model.api_calls[b.second].domain == v1::API_DOMAIN_RUNTIME;
    return a_runtime && !b_runtime;
  });
  return table;
}

const ApiCallEvent* FindLaunchCall(const TraceModel& model,
                                   const std::vector<std::pair<uint32_t, uint32_t>>& table,
                                   uint32_t correlation_id) {
  if (correlation_id == 0) return nullptr;
  auto it = std::lower_bound(table.begin(), table.end(), correlation_id,
                             [](const auto& entry, uint32_t id) { return entry.first < id; });
  if (it == table.end() || it->first != correlation_id) return nullptr;
  return &model.api_calls[it->second];
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

}  // namespace warpscope
