// The writer's stats: its own counters, the collectors' named counters, and the Stats packet
// that carries both (names and meanings: trace_writer.h and docs/format.md).
#ifndef WARPSCOPE_PROTO_WRITER_WRITER_STATS_H_
#define WARPSCOPE_PROTO_WRITER_WRITER_STATS_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proto/writer/packet_framing.h"
#include "proto/writer/stats_table.h"
#include "proto/writer/trace_records.h"
#include "proto/writer/wire_format.h"
#include "warpscope/v1/trace_encoders.h"
#include "warpscope/v1/trace_fields.h"

namespace warpscope::writer_internal {

// "writer.events_written.<field>" (the members of stats::kWriterEventsWrittenKind) of each
// packet kind that is an event (not the header, stats or end of trace), by field number: made
// at compile time from the schema's field names (trace_fields.h).
inline constexpr size_t kMaxKindCounterName = 64;
inline constexpr auto kKindCounterText = [] {
  constexpr std::string_view family = stats::kWriterEventsWrittenKind.name;
  constexpr std::string_view prefix = family.substr(0, family.find('<'));
  std::array<std::array<char, kMaxKindCounterName>, kNumPacketFields> text{};
  for (size_t f = 0; f < kNumPacketFields; ++f) {
    const std::string_view field = fields::kTracePacketFieldNames[f];
    if (field.empty() || f == Packet::kHeader || f == Packet::kStats || f == Packet::kEndOfTrace) {
      continue;
    }
    if (prefix.size() + field.size() >= kMaxKindCounterName) throw "field name too long";
    std::copy(prefix.begin(), prefix.end(), text[f].begin());
    std::copy(field.begin(), field.end(), text[f].begin() + prefix.size());
  }
  return text;
}();
inline constexpr std::array<std::string_view, kNumPacketFields> kKindCounterNames = [] {
  std::array<std::string_view, kNumPacketFields> names{};
  for (size_t f = 0; f < kNumPacketFields; ++f) names[f] = kKindCounterText[f].data();
  return names;
}();
static_assert(kKindCounterNames[Packet::kKernel] == "writer.events_written.kernel");
static_assert(kKindCounterNames[Packet::kStats].empty());

// A counter that one thread at a time updates (the holder of Impl::mu) and any thread may read
// without the lock. A relaxed load + store instead of fetch_add keeps locked instructions off
// the hot path.
class RelaxedCounter {
 public:
  void Add(uint64_t delta) {
    value_.store(value_.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
  }
  void Max(uint64_t value) {
    if (value > Get()) value_.store(value, std::memory_order_relaxed);
  }
  void Set(uint64_t value) { value_.store(value, std::memory_order_relaxed); }
  uint64_t Get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

struct NamedCounter {
  uint64_t value = 0;
  Severity severity = Severity::kInfo;
};

struct BuiltinCounter {
  const StatDef* stat;  // Its row in the stats table: name and severity.
  uint64_t value;
  bool always;  // Written even when zero.
};
inline constexpr size_t kNumBuiltinCounters = 17;
using BuiltinCounters = std::array<BuiltinCounter, kNumBuiltinCounters>;

// The counters of one Stats packet, copied, so that the measure and write passes of its
// encoding see the same values.
struct StatsSnapshot {
  BuiltinCounters builtins;
  std::vector<std::pair<std::string, NamedCounter>> named;  // Collectors' counters.
  std::array<uint64_t, kNumPacketFields> packet_counts;
};

bool IsBuiltinCounter(std::string_view name);

// The body of a Stats packet: the writer's counters (a collector's counter of the same name
// adds to them), events_written per packet kind, then the collectors' counters by name.
template <typename Sink>
void EncodeStats(Sink& s, const StatsSnapshot& stats, bool final, uint64_t timestamp_rel) {
  auto named_value = [&](std::string_view name) -> uint64_t {
    for (const auto& [n, c] : stats.named) {
      if (n == name) return c.value;
    }
    return 0;
  };
  using F = fields::Stats;
  s.Uint(F::kTimestampNs, timestamp_rel);
  s.Bool(F::kFinal, final);
  auto counter = [&](std::string_view name, uint64_t value, Severity severity) {
    wire::Nested(s, F::kCounters, [&](auto& m) { EncodeStatCounter(m, name, value, severity); });
  };
  for (const BuiltinCounter& b : stats.builtins) {
    const uint64_t value = b.value + named_value(b.stat->name);
    if (value != 0 || b.always) counter(b.stat->name, value, b.stat->severity);
  }
  for (size_t f = 0; f < kNumPacketFields; ++f) {
    const uint64_t n = stats.packet_counts[f];
    if (!kKindCounterNames[f].empty() && n != 0) {
      counter(kKindCounterNames[f], n, stats::kWriterEventsWrittenKind.severity);
    }
  }
  for (const auto& [name, c] : stats.named) {
    if (IsBuiltinCounter(name)) continue;
    counter(name, c.value, c.severity);
  }
}

}  // namespace warpscope::writer_internal

#endif  // WARPSCOPE_PROTO_WRITER_WRITER_STATS_H_
