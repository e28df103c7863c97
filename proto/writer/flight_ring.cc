// The flight recorder (TraceWriterOptions::ring_ns > 0): no file while recording. Full chunks,
// and at each flush interval the partial one, go to a ring, oldest first; the writer thread
// frees chunks whose last commit is older than ring_ns, and when the pool is used up the
// oldest chunk is reused (its events counted as evicted). DumpRing takes the whole ring out
// under the lock, writes it to a new file on the caller's thread without the lock, and gives
// the chunks back. Definitions are kept out of the ring (kept_definitions.h), so a dump begins
// with all of them whatever was evicted.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "proto/writer/writer_impl.h"
#include "warpscope/v1/trace_encoders.h"

namespace warpscope {

using writer_internal::Chunk;
using writer_internal::DefinitionsSnapshot;
using writer_internal::ErrnoText;
using writer_internal::NowIn;
using writer_internal::Packet;
using writer_internal::PacketCounts;
using writer_internal::StatsSnapshot;

namespace {

uint64_t ReadVarint(const uint8_t* p, size_t n, size_t* pos) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64 && *pos < n; shift += 7) {
    const uint8_t byte = p[(*pos)++];
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  return value;
}

// Adds the packets of whole-packet bytes [p, p + n) to `counts`, by kind.
void CountPackets(const uint8_t* p, size_t n, PacketCounts* counts) {
  size_t pos = 0;
  while (pos < n) {
    ++pos;  // The Trace.packet tag, one byte (packet_framing.h).
    const uint64_t length = ReadVarint(p, n, &pos);
    const size_t end = pos + length;
    const uint64_t field = ReadVarint(p, n, &pos) >> 3;
    if (field < counts->size()) ++(*counts)[field];
    pos = end;
  }
}

// What a dump writes, taken from the writer under its lock.
struct RingDump {
  std::vector<Chunk*> chunks;  // Oldest first.
  DefinitionsSnapshot definitions;
  StatsSnapshot stats;
  uint64_t begin_ns = 0;  // Relative to the time base.
  uint64_t end_ns = 0;
  std::vector<uint8_t> live;  // Encoded packets of the live memory blocks written back.
  PacketCounts live_counts{};
};

// Writes the dump file; false with *err set.
bool WriteDump(int fd, const std::vector<uint8_t>& header, RingDump& dump, uint32_t dump_id,
               CaptureTrigger trigger, int* err) {
  uint64_t bytes = 0;
  auto write = [&](std::span<const uint8_t> data) {
    bytes += data.size();
    return writer_internal::WriteAllTo(fd, data.data(), data.size(), err);
  };
  PacketCounts counts = dump.definitions.counts;
  std::vector<uint8_t> packet;
  auto edge = [&](bool begin, uint64_t ts, CaptureTrigger why) {
    packet.clear();
    const CaptureWindowEdgeRecord r{.window_id = dump_id, .begin = begin, .trigger = why};
    TraceWriter::Impl::AppendPacket(&packet, Packet::kCaptureWindow, [&](auto& s) {
      writer_internal::EncodeCaptureWindowEdge(s, r, ts);
    });
    ++counts[Packet::kCaptureWindow];
    return write(packet);
  };
  if (!write(header)) return false;
  for (std::span<const uint8_t> part : dump.definitions.parts) {
    if (!write(part)) return false;
  }
  for (size_t f = 0; f < counts.size(); ++f) counts[f] += dump.live_counts[f];
  if (!dump.live.empty() && !write(dump.live)) return false;
  if (!edge(true, dump.begin_ns, CaptureTrigger::kFlightRecorder)) return false;
  for (const Chunk* c : dump.chunks) {
    CountPackets(c->data.get(), c->used, &counts);
    if (!write({c->data.get(), c->used})) return false;
  }
  if (!edge(false, dump.end_ns, trigger)) return false;

  // The final Stats describe this file: its packets and the bytes before them.
  StatsSnapshot& stats = dump.stats;
  stats.packet_counts = counts;
  uint64_t events = 0;
  for (size_t f = 0; f < counts.size(); ++f) {
    if (!writer_internal::kKindCounterNames[f].empty()) events += counts[f];
  }
  for (writer_internal::BuiltinCounter& b : stats.builtins) {
    if (b.stat == &stats::kWriterEventsWritten) b.value = events;
    if (b.stat == &stats::kWriterBytesWritten) b.value = bytes;
    if (b.stat == &stats::kWriterRingDumps) b.value += 1;  // This one.
  }
  packet.clear();
  TraceWriter::Impl::AppendPacket(&packet, Packet::kStats, [&](auto& s) {
    writer_internal::EncodeStats(s, stats, /*final=*/true, dump.end_ns);
  });
  TraceWriter::Impl::AppendPacket(&packet, Packet::kEndOfTrace, [&](auto& s) {
    writer_internal::EncodeEndOfTrace(s, dump.end_ns, EndReason::kDump, 0);
  });
  return write(packet);
}

}  // namespace

void TraceWriter::Impl::RingWriterMain() {
  using Clock = std::chrono::steady_clock;
  auto next_flush = Clock::now() + flush_interval;
  std::unique_lock<std::mutex> lock(mu);
  while (!stop) {
    writer_wake.wait_until(lock, next_flush, [&] { return flush_requested || stop; });
    const auto now = Clock::now();
    const bool flush_due = flush_requested || now >= next_flush;
    if (flush_due) {
      flush_requested = false;
      next_flush = now + flush_interval;
    }
    AgeRing(flush_due);
    progress.notify_all();
  }
  writer_exited = true;
  progress.notify_all();
}

uint64_t TraceWriter::Impl::RingNow() const {
  return ring_clock ? ring_clock() : NowIn(clock_domain, time_base_ns);
}

void TraceWriter::Impl::HandToRing(Chunk* c) {
  c->last_commit_ns = RingNow();
  ring.push_back(c);  // Capacity max_chunks: never full.
  ring_held_bytes += c->used;
  ring_held_high_water.Max(ring_held_bytes);
}

Chunk* TraceWriter::Impl::EvictOldest() {
  if (ring.empty()) return nullptr;
  Chunk* c = ring.pop_front();
  ring_evicted_events.Add(c->events);
  ring_held_bytes -= c->used;
  c->Reset();
  return c;
}

void TraceWriter::Impl::AgeRing(bool flush_due) {
  if (flush_due && current != nullptr && current->used > 0) {
    HandToRing(current);
    current = nullptr;
  }
  const uint64_t now = RingNow();
  if (now <= ring_ns) return;
  while (!ring.empty() && ring.front()->last_commit_ns < now - ring_ns) {
    Chunk* c = ring.pop_front();
    ring_held_bytes -= c->used;
    c->Reset();
    free_chunks.push_back(c);  // Capacity max_chunks: does not allocate.
  }
}

// The live blocks older than the ring's oldest event (`before`, absolute), each with its
// stack, as encoded packets (the writer's lock held: RelTime reads its time base).
void TraceWriter::Impl::EncodeLiveMemory(const LiveMemory& live, uint64_t before,
                                         std::vector<uint8_t>* out, PacketCounts* counts) {
  std::vector<uint32_t> written;
  for (const MemoryRecord& r : live.blocks) {
    if (r.timestamp_ns >= before) continue;  // its own event is held in the ring
    written.push_back(r.correlation_id);
    const uint64_t ts = RelTime(r.timestamp_ns);
    AppendPacket(out, Packet::kMemory,
                 [&](auto& s) { writer_internal::EncodeMemoryEvent(s, r, ts); });
    ++(*counts)[Packet::kMemory];
  }
  std::sort(written.begin(), written.end());
  for (const ApiStackRecord& s : live.stacks) {
    if (!std::binary_search(written.begin(), written.end(), s.correlation_id)) continue;
    const uint64_t ts = RelTime(s.timestamp_ns);
    AppendPacket(out, Packet::kApiStack,
                 [&](auto& e) { writer_internal::EncodeApiStackEvent(e, s, ts); });
    ++(*counts)[Packet::kApiStack];
  }
}

bool TraceWriter::DumpRing(const std::string& path, CaptureTrigger trigger, uint32_t dump_id,
                           uint64_t timestamp_ns, std::string* error, const LiveMemory& live) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> close_lock(w.close_mu);
  if (!w.ring_mode || w.closed) {
    *error = "warpscope: cannot dump to " + path + ": the trace writer " +
             (w.ring_mode ? "is closed" : "holds no flight-recorder ring");
    return false;
  }
  RingDump dump;
  try {
    dump.chunks.reserve(w.max_chunks);
  } catch (...) {
    *error = "warpscope: out of memory dumping to " + path + "; the events stay held";
    return false;
  }
  bool created = false;
  const int fd = writer_internal::CreateTraceFileAt(path, w.force_overwrite, &created, error);
  if (fd < 0) return false;
  bool snapshot_ok = false;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    if (w.current != nullptr && w.current->used > 0) {
      w.HandToRing(w.current);
      w.current = nullptr;
    }
    while (!w.ring.empty()) dump.chunks.push_back(w.ring.pop_front());
    w.ring_held_bytes = 0;
    const uint64_t oldest =
        dump.chunks.empty() ? timestamp_ns : dump.chunks.front()->first_commit_ns;
    dump.begin_ns = w.RelTime(oldest);
    try {
      w.EncodeLiveMemory(live, oldest, &dump.live, &dump.live_counts);
    } catch (...) {
      dump.live.clear();  // out of memory: the dump goes on without them
      dump.live_counts = {};
    }
    dump.end_ns = w.RelTime(timestamp_ns);
    snapshot_ok = w.kept.TakeSnapshot(&dump.definitions);
    dump.stats = w.SnapshotStats(0);
  }
  int err = ENOMEM;
  bool ok = snapshot_ok && WriteDump(fd, w.header_packet, dump, dump_id, trigger, &err);
  if (::close(fd) != 0 && ok && errno != EINTR) {
    ok = false;
    err = errno;
  }
  {
    std::lock_guard<std::mutex> lock(w.mu);
    if (ok) {
      for (Chunk* c : dump.chunks) {
        c->Reset();
        w.free_chunks.push_back(c);
      }
      w.ring_dumps.Add(1);
    } else {
      // Back to the front of the ring, before what came in meanwhile.
      for (auto it = dump.chunks.rbegin(); it != dump.chunks.rend(); ++it) {
        w.ring.push_front(*it);
        w.ring_held_bytes += (*it)->used;
      }
    }
  }
  if (!ok) {
    if (created) ::unlink(path.c_str());
    *error = "warpscope: cannot write flight-recorder dump " + path + ": " + ErrnoText(err) +
             "; the events stay held for the next dump";
  }
  return ok;
}

}  // namespace warpscope
