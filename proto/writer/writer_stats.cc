// The writer's stats: its own counters as they stand, the collectors' named counters
// (AddToCounter, SetCounter), and the snapshot each Stats packet encodes.
#include <array>
#include <mutex>
#include <string>
#include <string_view>

#include "proto/writer/stats_table.h"
#include "proto/writer/writer_impl.h"
#include "proto/writer/writer_stats.h"

namespace warpscope {
namespace writer_internal {

namespace {

// The writer's own counters, in the order of every Stats packet.
constexpr std::array<const StatDef*, kNumBuiltinCounters> kBuiltinStats = {
    &stats::kWriterEventsWritten,     &stats::kWriterBytesWritten,
    &stats::kWriterDroppedBufferFull, &stats::kWriterDroppedWriteError,
    &stats::kWriterBufferHighWater,   &stats::kWriterDroppedTooLarge,
    &stats::kWriterDroppedAfterClose, &stats::kWriterTimestampsClamped,
    &stats::kWriterInternFailed,      &stats::kWriterInternTableFull,
    &stats::kWriterPcBatchesSplit,    &stats::kWriterWriteErrors,
    &stats::kWriterDefinitionsKeptBytes, &stats::kWriterDefinitionsNotKept,
    &stats::kWriterRingEvictedEvents, &stats::kWriterRingDumps,
    &stats::kWriterRingHeldHighWater,
};

}  // namespace

bool IsBuiltinCounter(std::string_view name) {
  for (const StatDef* stat : kBuiltinStats) {
    if (stat->name == name) return true;
  }
  return false;
}

}  // namespace writer_internal

using writer_internal::kKindCounterNames;
using writer_internal::NamedCounter;
using writer_internal::kNumBuiltinCounters;
using writer_internal::kNumPacketFields;

uint64_t TraceWriter::Impl::EventsWritten() const {
  uint64_t total = 0;
  for (size_t f = 0; f < kNumPacketFields; ++f) {
    if (!kKindCounterNames[f].empty()) total += packets[f].Get();
  }
  return total;
}

bool TraceWriter::Impl::HoldsWork() const {
  using writer_internal::Packet;
  // An allocation or free (trace kind `alloc`) is work too: a program that only allocates
  // keeps what `warpscope memory` reads.
  for (uint32_t field : {Packet::kKernel, Packet::kMemcpy, Packet::kMemset, Packet::kGraphLaunch,
                         Packet::kMemory, Packet::kNvtxRange, Packet::kNvtxMark,
                         Packet::kNcclCall, Packet::kPmSample, Packet::kPmCounterData,
                         Packet::kPcSamples}) {
    if (packets[field].Get() != 0) return true;
  }
  if (dropped_buffer_full.Get() != 0 || dropped_too_large.Get() != 0 ||
      dropped_write_error.Get() != 0) {
    return true;
  }
  // A range pushed and never popped is not written, and records CUPTI dropped are unknown.
  std::lock_guard<std::mutex> lock(counters_mu);
  for (const StatDef* stat : {&stats::kNvtxUnclosedRanges, &stats::kCuptiDroppedRecords}) {
    auto it = named.find(stat->name);
    if (it != named.end() && it->second.value != 0) return true;
  }
  return false;
}

writer_internal::BuiltinCounters TraceWriter::Impl::Builtins(uint64_t bytes) const {
  // The first five always, the others once non-zero (docs/format.md).
  const std::array<uint64_t, kNumBuiltinCounters> values = {
      EventsWritten(),           bytes,
      dropped_buffer_full.Get(), dropped_write_error.Get(),
      buffer_high_water.Get(),   dropped_too_large.Get(),
      dropped_after_close.Get(), timestamps_clamped.Get(),
      intern_failed.Get(),       intern_table_full.Get(),
      pc_batches_split.Get(),    write_errors.Get(),
      definitions_kept_bytes.Get(), definitions_not_kept.Get(),
      ring_evicted_events.Get(), ring_dumps.Get(),
      ring_held_high_water.Get(),
  };
  BuiltinCounters counters;
  for (size_t i = 0; i < kNumBuiltinCounters; ++i) {
    counters[i] = {writer_internal::kBuiltinStats[i], values[i], /*always=*/i < 5};
  }
  return counters;
}

writer_internal::StatsSnapshot TraceWriter::Impl::SnapshotStats(uint64_t bytes_before) const {
  StatsSnapshot stats{.builtins = {}, .named = {}, .packet_counts = {}};
  // A copy of the collectors' counters: counters_mu must not be held while Close waits for
  // buffer space, or a thread in a Batch calling AddToCounter would deadlock with it.
  try {
    std::lock_guard<std::mutex> counters_lock(counters_mu);
    stats.named.assign(named.begin(), named.end());
  } catch (...) {
    stats.named.clear();  // Out of memory: the writer's own counters still go out.
  }
  for (size_t f = 0; f < kNumPacketFields; ++f) stats.packet_counts[f] = packets[f].Get();
  stats.builtins = Builtins(bytes_before);
  return stats;
}

bool TraceWriter::Impl::EmitStats(bool final, uint64_t timestamp_rel,
                                  std::unique_lock<std::mutex>* wait_lock) {
  buffer_high_water.Max(bytes_committed - bytes_done);
  // The Stats packet says how many bytes of its file precede it, which is what the file holds
  // of the stream when it is measured.
  const StatsSnapshot stats = SnapshotStats(FileBytesCommitted());
  return EmitSized(
      writer_internal::Packet::kStats,
      [&](auto& s) { writer_internal::EncodeStats(s, stats, final, timestamp_rel); }, wait_lock);
}

namespace {

// Applies `update` to the collectors' counter `name` (made on first use) and sets its severity.
template <typename Update>
void UpdateNamedCounter(TraceWriter::Impl& w, std::string_view name, Severity severity,
                        Update update) {
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  try {
    std::lock_guard<std::mutex> lock(w.counters_mu);
    auto it = w.named.find(name);
    if (it == w.named.end()) it = w.named.emplace(std::string(name), NamedCounter{}).first;
    update(it->second.value);
    it->second.severity = severity;
  } catch (...) {
    // Out of memory for a new name: the update is lost; nothing else can be done here.
  }
}

}  // namespace

void TraceWriter::AddToCounter(std::string_view name, uint64_t delta, Severity severity) {
  UpdateNamedCounter(*impl_, name, severity, [delta](uint64_t& value) { value += delta; });
}

void TraceWriter::SetCounter(std::string_view name, uint64_t value, Severity severity) {
  UpdateNamedCounter(*impl_, name, severity, [value](uint64_t& v) { v = value; });
}

uint64_t TraceWriter::Counter(std::string_view name) const {
  const Impl& w = *impl_;
  uint64_t value = 0;
  for (const writer_internal::BuiltinCounter& b : w.Builtins(w.bytes_written.Get())) {
    if (b.stat->name == name) value = b.value;
  }
  for (size_t f = 0; f < kNumPacketFields; ++f) {
    if (!kKindCounterNames[f].empty() && kKindCounterNames[f] == name) value = w.packets[f].Get();
  }
  if (w.abandoned.load(std::memory_order_relaxed)) return value;
  std::lock_guard<std::mutex> lock(w.counters_mu);
  auto it = w.named.find(name);
  if (it != w.named.end()) value += it->second.value;
  return value;
}

}  // namespace warpscope
