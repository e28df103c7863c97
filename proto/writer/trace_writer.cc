// TraceWriter: encodes records as protobuf wire format into fixed-size chunks under one lock,
// and a writer thread appends full (and, periodically, partial) chunks to the file.
//
// Life of a byte: Batch::Write encodes a message body into a stack buffer, Reserve finds room
// for the whole packet in the current chunk (a packet never straddles two chunks), Commit
// makes it part of the stream. A full chunk is queued for the writer thread, which writes it
// outside the lock and returns it to the free list. Every flush_interval the writer thread
// also writes the filled part of the current chunk, so a killed process leaves whole packets.
#include "proto/writer/trace_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "proto/common/setting_error.h"
#include "proto/writer/wire_format.h"
#include "warpscope/v1/trace_fields.h"

namespace warpscope {
namespace {

using wire::BufferSink;
using wire::SizeSink;

// TracePacket's oneof members: the field number of each packet kind.
using Packet = fields::TracePacket;
constexpr size_t kNumPacketFields = Packet::kMaxFieldNumber + 1;

// The events_written counter of each packet kind that is an event (not the header, stats or
// end of trace), indexed by field number.
constexpr std::array<std::string_view, kNumPacketFields> kKindCounterNames = [] {
  std::array<std::string_view, kNumPacketFields> names{};
  names[Packet::kDevice] = "writer.events_written.device";
  names[Packet::kInternedString] = "writer.events_written.interned_string";
  names[Packet::kLaunchConfig] = "writer.events_written.launch_config";
  names[Packet::kThread] = "writer.events_written.thread";
  names[Packet::kKernel] = "writer.events_written.kernel";
  names[Packet::kMemcpy] = "writer.events_written.memcpy";
  names[Packet::kMemset] = "writer.events_written.memset";
  names[Packet::kSynchronization] = "writer.events_written.synchronization";
  names[Packet::kApiCall] = "writer.events_written.api_call";
  names[Packet::kNvtxRange] = "writer.events_written.nvtx_range";
  names[Packet::kNvtxMark] = "writer.events_written.nvtx_mark";
  names[Packet::kGraphLaunch] = "writer.events_written.graph_launch";
  names[Packet::kPmMetricSet] = "writer.events_written.pm_metric_set";
  names[Packet::kPmSample] = "writer.events_written.pm_sample";
  names[Packet::kPcStallReasons] = "writer.events_written.pc_stall_reasons";
  names[Packet::kPcSamples] = "writer.events_written.pc_samples";
  names[Packet::kCaptureWindow] = "writer.events_written.capture_window";
  names[Packet::kContext] = "writer.events_written.context";
  names[Packet::kOverhead] = "writer.events_written.overhead";
  names[Packet::kNotice] = "writer.events_written.notice";
  names[Packet::kPmCounterData] = "writer.events_written.pm_counter_data";
  names[Packet::kCubin] = "writer.events_written.cubin";
  return names;
}();

constexpr uint32_t kTracePacketTag = wire::MakeTag(fields::Trace::kPacket, wire::kLengthDelimited);
static_assert(kTracePacketTag < 0x80, "PacketSize, MaxBodyIn and WriteFrame take it as one byte");

// Bytes of the frame around a TracePacket body: Trace.packet tag and length, then the oneof
// tag and length.
constexpr size_t PacketSize(uint32_t field, size_t body) {
  const size_t inner = wire::LengthDelimitedSize(field, body);
  return 1 + wire::VarintSize(inner) + inner;
}

// The largest body of `field` that fits in `capacity` bytes (lengths of a chunk fit 5 bytes).
constexpr size_t MaxBodyIn(uint32_t field, size_t capacity) {
  const size_t overhead = 1 + 5 + wire::VarintSize(wire::MakeTag(field, wire::kLengthDelimited)) + 5;
  return capacity > overhead ? capacity - overhead : 0;
}

// Largest body of the fixed-shape messages: LaunchConfig has 18 varint fields of at most 11
// bytes (tag + 10) = 198 bytes.
constexpr size_t kSmallBodyBytes = 256;

// Bounds on what interning remembers; past them values are written again on each use.
constexpr size_t kMaxInternedStringBytes = 32 << 20;
constexpr size_t kMaxInternedConfigs = 1 << 16;
constexpr size_t kMaxInternedThreads = 1 << 16;

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
  uint64_t Get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

struct Chunk {
  std::unique_ptr<uint8_t[]> data;
  size_t used = 0;             // Bytes of whole packets; guarded by Impl::mu.
  uint64_t events = 0;         // Packets in [0, used); guarded by Impl::mu.
  size_t flushed = 0;          // Bytes already written; the writer thread's own.
  uint64_t events_flushed = 0;  // Packets already written; the writer thread's own.
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct LaunchConfigHash {
  size_t operator()(const LaunchConfigRecord& c) const {
    const uint32_t fields[] = {c.grid_x, c.grid_y, c.grid_z, c.block_x, c.block_y, c.block_z,
                               c.cluster_x, c.cluster_y, c.cluster_z, c.registers_per_thread,
                               c.static_shared_memory, c.dynamic_shared_memory,
                               c.local_memory_per_thread, c.shared_memory_executed,
                               c.shared_memory_config, c.shared_memory_carveout_requested,
                               c.shmem_limit_config};
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint32_t f : fields) {
      h ^= f;
      h *= 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
    return static_cast<size_t>(h);
  }
};

struct NamedCounter {
  uint64_t value = 0;
  Severity severity = Severity::kInfo;
};

enum class DropCause { kClosed, kWriteError, kTooLarge, kBufferFull };

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r returns the message (possibly not in buf); it is thread-safe unlike strerror.
  return std::string(strerror_r(err, buf, sizeof(buf)));
}

// One write(2) so that lines from several threads do not interleave.
void PrintLine(const std::string& line) {
  std::string text = line + "\n";
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

uint64_t NowIn(ClockDomain domain, uint64_t fallback) {
  clockid_t id;
  switch (domain) {
    case ClockDomain::kRealtime: id = CLOCK_REALTIME; break;
    case ClockDomain::kMonotonic: id = CLOCK_MONOTONIC; break;
    case ClockDomain::kMonotonicRaw: id = CLOCK_MONOTONIC_RAW; break;
    default: return fallback;  // Synthetic time has no clock to read.
  }
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// ---------------------------------------------------------------------------------------
// Message bodies. Field numbers come from warpscope/v1/trace_fields.h, generated from
// proto/warpscope/v1/trace.proto at build time.

template <typename Sink>
void EncodeKeyValues(Sink& s, uint32_t field, const KeyValueList& list) {
  using F = fields::KeyValue;
  // Not a structured binding: clang before 16 cannot capture those in the lambda.
  for (const auto& entry : list) {
    wire::Nested(s, field, [&](auto& m) {
      m.String(F::kKey, entry.first);
      m.String(F::kValue, entry.second);
    });
  }
}

template <typename Sink>
void EncodeHeader(Sink& s, const HeaderRecord& h) {
  using F = fields::Header;
  s.Uint(F::kFormatMajor, kFormatMajor);
  s.Uint(F::kFormatMinor, kFormatMinor);
  s.String(F::kToolVersion, h.tool_version);
  s.Uint(F::kPid, h.pid);
  s.Uint(F::kPpid, h.ppid);
  s.String(F::kHostname, h.hostname);
  for (const std::string& arg : h.command_line) s.RepeatedString(F::kCommandLine, arg);
  EncodeKeyValues(s, F::kRankEnv, h.rank_env);
  s.EnumValue(F::kClockDomain, h.clock_domain);
  s.Uint(F::kTimeBaseNs, h.time_base_ns);
  s.Uint(F::kUnixTimeBaseNs, h.unix_time_base_ns);
  EncodeKeyValues(s, F::kConfig, h.config);
  s.String(F::kProducer, h.producer);
  s.Uint(F::kCuptiVersion, h.cupti_version);
  s.Uint(F::kCudaDriverVersion, h.cuda_driver_version);
}

template <typename Sink>
void EncodeDevice(Sink& s, const DeviceRecord& d) {
  using F = fields::Device;
  s.Uint(F::kId, d.id);
  s.String(F::kName, d.name);
  s.Uint(F::kComputeCapabilityMajor, d.compute_capability_major);
  s.Uint(F::kComputeCapabilityMinor, d.compute_capability_minor);
  s.Uint(F::kSmCount, d.sm_count);
  s.Uint(F::kMaxWarpsPerSm, d.max_warps_per_sm);
  s.Uint(F::kMaxBlocksPerSm, d.max_blocks_per_sm);
  s.Uint(F::kMaxThreadsPerBlock, d.max_threads_per_block);
  s.Uint(F::kMaxRegistersPerSm, d.max_registers_per_sm);
  s.Uint(F::kMaxRegistersPerBlock, d.max_registers_per_block);
  s.Uint(F::kMaxSharedMemoryPerSm, d.max_shared_memory_per_sm);
  s.Uint(F::kMaxSharedMemoryPerBlock, d.max_shared_memory_per_block);
  s.Uint(F::kMaxSharedMemoryPerBlockOptin, d.max_shared_memory_per_block_optin);
  s.Uint(F::kReservedSharedMemoryPerBlock, d.reserved_shared_memory_per_block);
  s.Uint(F::kThreadsPerWarp, d.threads_per_warp);
  s.Uint(F::kCoreClockKhz, d.core_clock_khz);
  s.Uint(F::kGlobalMemoryBytes, d.global_memory_bytes);
  s.Uint(F::kGlobalMemoryBandwidthKbps, d.global_memory_bandwidth_kbps);
  s.Uint(F::kL2CacheBytes, d.l2_cache_bytes);
  s.String(F::kUuid, d.uuid);
  s.Uint(F::kPciBusId, d.pci_bus_id);
  s.Uint(F::kRegisterAllocationUnit, d.register_allocation_unit);
  s.Uint(F::kSharedMemoryAllocationUnit, d.shared_memory_allocation_unit);
}

template <typename Sink>
void EncodePcSampleRecord(Sink& s, const PcSampleRecord& r) {
  using F = fields::PcSampleRecord;
  s.Uint(F::kCubinCrc, r.cubin_crc);
  s.Uint(F::kFunctionNameId, r.function_name_id);
  s.Uint(F::kPcOffset, r.pc_offset);
  s.PackedVarint(F::kStallReasonIndex, std::span<const uint32_t>(r.stall_reason_index));
  s.PackedVarint(F::kSamples, std::span<const uint64_t>(r.samples));
  s.Uint(F::kCorrelationId, r.correlation_id);
}

template <typename Sink>
void EncodeEndOfTrace(Sink& s, uint64_t timestamp_rel, EndReason reason) {
  using F = fields::EndOfTrace;
  s.Uint(F::kTimestampNs, timestamp_rel);
  s.EnumValue(F::kReason, reason);
}

size_t PcSampleRecordFieldSize(const PcSampleRecord& r) {
  SizeSink s;
  wire::Nested(s, fields::PcSampleBatch::kRecords, [&](auto& m) { EncodePcSampleRecord(m, r); });
  return s.size();
}

}  // namespace

// ---------------------------------------------------------------------------------------

struct TraceWriter::Impl {
  // Set in Open, then read-only.
  std::string path;
  int fd = -1;
  bool created_file = false;  // Open made the file (and removes it if it fails later).
  uint64_t time_base_ns = 0;
  ClockDomain clock_domain = ClockDomain::kUnspecified;
  size_t chunk_bytes = 0;
  size_t max_chunks = 0;
  std::chrono::milliseconds flush_interval{500};
  std::chrono::milliseconds stats_interval{1000};
  std::chrono::milliseconds close_timeout{10000};

  std::atomic<bool> abandoned{false};
  std::atomic<bool> healthy{true};

  // Disk-full handling. Before each write the writer thread allocates the blocks for it plus
  // kTailReserveBytes beyond (fallocate, FALLOC_FL_KEEP_SIZE: the file size is unchanged).
  // On a full disk that allocation fails before any write is cut short, recording stops, and
  // Close writes the final Stats and EndOfTrace into the blocks still reserved, so the trace
  // ends whole and says how many events it lost. Where fallocate is not supported (some
  // network file systems) writes go ahead unreserved.
  static constexpr size_t kTailReserveBytes = 256 << 10;
  bool reserve_supported = true;  // writer thread only
  uint64_t file_pos = 0;          // bytes in the file; writer thread, then Close after join
  bool disk_full = false;         // guarded by mu

  std::mutex mu;
  // Guarded by mu.
  bool accepting = true;      // False once Close began or writing failed.
  bool failed = false;        // Writing failed; everything still buffered is discarded.
  bool stop = false;          // Close asks the writer thread to finish.
  bool writer_exited = false;
  bool flush_requested = false;
  Chunk* current = nullptr;
  std::vector<std::unique_ptr<Chunk>> chunks;  // Owns all; capacity max_chunks.
  std::vector<Chunk*> free_chunks;             // Capacity max_chunks: push_back never allocates.
  std::vector<Chunk*> queue;                   // For the writer thread, in file order.
  uint64_t bytes_committed = 0;                // Bytes of the stream encoded so far.
  uint64_t bytes_done = 0;                     // Of those, written or discarded.
  std::condition_variable writer_wake;         // Work for the writer thread.
  std::condition_variable progress;            // The writer thread wrote or freed something.

  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> strings;
  size_t string_bytes = 0;
  uint64_t next_string_id = 1;
  std::unordered_map<LaunchConfigRecord, uint64_t, LaunchConfigHash> configs;
  uint64_t next_config_id = 1;
  std::unordered_map<uint64_t, uint64_t> threads;
  uint64_t next_thread_id = 1;
  std::vector<uint64_t> scratch_starts;     // PmCounterData times, relative
  std::vector<uint64_t> scratch_durations;

  // Updated under mu (bytes_written: by the writer thread alone); read anywhere.
  std::array<RelaxedCounter, kNumPacketFields> packets;
  RelaxedCounter bytes_written;
  RelaxedCounter dropped_buffer_full;
  RelaxedCounter dropped_write_error;
  RelaxedCounter dropped_too_large;
  RelaxedCounter dropped_after_close;
  RelaxedCounter buffer_high_water;
  RelaxedCounter timestamps_clamped;
  RelaxedCounter intern_failed;
  RelaxedCounter intern_table_full;
  RelaxedCounter pc_batches_split;
  RelaxedCounter write_errors;

  // Collectors' counters. Lock order: mu before counters_mu.
  mutable std::mutex counters_mu;
  std::map<std::string, NamedCounter, std::less<>> named;

  std::mutex close_mu;  // Serializes Close; `closed` is guarded by it.
  bool closed = false;
  bool stuck = false;   // Close gave up on the writer thread (set under close_mu and mu).
  std::unique_ptr<std::thread> thread;

  // ---- Time.
  uint64_t RelTime(uint64_t abs_ns) {
    if (abs_ns >= time_base_ns) [[likely]] return abs_ns - time_base_ns;
    timestamps_clamped.Add(1);
    return 0;
  }
  uint64_t Duration(uint64_t start_ns, uint64_t end_ns) {
    if (end_ns >= start_ns) [[likely]] return end_ns - start_ns;
    timestamps_clamped.Add(1);
    return 0;
  }

  // ---- Chunks (all with mu held).
  void CountDrop(DropCause cause) {
    switch (cause) {
      case DropCause::kClosed: dropped_after_close.Add(1); break;
      case DropCause::kWriteError: dropped_write_error.Add(1); break;
      case DropCause::kTooLarge: dropped_too_large.Add(1); break;
      case DropCause::kBufferFull: dropped_buffer_full.Add(1); break;
    }
  }
  bool RefuseIfClosed() {
    if (accepting) [[likely]] return false;
    CountDrop(failed ? DropCause::kWriteError : DropCause::kClosed);
    return true;
  }

  Chunk* AcquireChunk() {
    if (!free_chunks.empty()) {
      Chunk* c = free_chunks.back();
      free_chunks.pop_back();
      return c;
    }
    if (chunks.size() >= max_chunks) return nullptr;
    // Chunks are allocated on first need, so a short trace does not hold 64 MiB.
    auto chunk = std::unique_ptr<Chunk>(new (std::nothrow) Chunk);
    if (chunk == nullptr) return nullptr;
    chunk->data.reset(new (std::nothrow) uint8_t[chunk_bytes]);
    if (chunk->data == nullptr) return nullptr;
    chunks.push_back(std::move(chunk));  // Capacity reserved in Open: does not allocate.
    return chunks.back().get();
  }

  void SubmitCurrent() {
    if (current == nullptr) return;
    if (current->used == 0) return;
    queue.push_back(current);  // Capacity max_chunks: does not allocate.
    current = nullptr;
    buffer_high_water.Max(bytes_committed - bytes_done);
    writer_wake.notify_one();
  }

  // Room for `size` bytes in the current chunk, or nullptr with *cause set.
  uint8_t* ReserveSpace(size_t size, DropCause* cause) {
    if (current != nullptr && chunk_bytes - current->used >= size) [[likely]] {
      return current->data.get() + current->used;
    }
    if (size > chunk_bytes) {
      *cause = DropCause::kTooLarge;
      return nullptr;
    }
    SubmitCurrent();
    if (current == nullptr) current = AcquireChunk();
    if (current == nullptr) {
      *cause = DropCause::kBufferFull;
      return nullptr;
    }
    return current->data.get() + current->used;
  }

  uint8_t* Reserve(size_t size) {
    DropCause cause;
    uint8_t* out = ReserveSpace(size, &cause);
    if (out == nullptr) [[unlikely]] CountDrop(cause);
    return out;
  }

  // For the last packets of Close: waits for the writer thread to free a chunk rather than
  // dropping them; gives up when the writer thread makes no progress for close_timeout.
  uint8_t* ReserveWaiting(size_t size, std::unique_lock<std::mutex>& lock) {
    uint64_t last_done = bytes_done;
    auto deadline = std::chrono::steady_clock::now() + close_timeout;
    for (;;) {
      DropCause cause;
      uint8_t* out = ReserveSpace(size, &cause);
      if (out != nullptr) return out;
      if (cause != DropCause::kBufferFull || failed || writer_exited) {
        CountDrop(failed ? DropCause::kWriteError : cause);
        return nullptr;
      }
      if (progress.wait_until(lock, deadline) == std::cv_status::timeout) {
        if (bytes_done == last_done) {
          CountDrop(cause);
          return nullptr;
        }
        last_done = bytes_done;
        deadline = std::chrono::steady_clock::now() + close_timeout;
      }
    }
  }

  void Commit(size_t size, uint32_t field) {
    current->used += size;
    ++current->events;
    bytes_committed += size;
    packets[field].Add(1);
  }

  static uint8_t* WriteFrame(uint8_t* out, uint32_t field, size_t body) {
    *out++ = static_cast<uint8_t>(kTracePacketTag);
    out = wire::WriteVarint(wire::LengthDelimitedSize(field, body), out);
    out = wire::WriteVarint(wire::MakeTag(field, wire::kLengthDelimited), out);
    return wire::WriteVarint(body, out);
  }

  // Fixed-shape messages: encode into a stack buffer, then copy with the exact frame.
  template <typename EncodeFn>
  bool EmitSmall(uint32_t field, EncodeFn&& encode) {
    if (RefuseIfClosed()) return false;
    uint8_t body[kSmallBodyBytes];
    BufferSink sink(body);
    encode(sink);
    const size_t body_size = sink.size();
    const size_t total = PacketSize(field, body_size);
    uint8_t* out = Reserve(total);
    if (out == nullptr) return false;
    out = WriteFrame(out, field, body_size);
    std::memcpy(out, body, body_size);
    Commit(total, field);
    return true;
  }

  // Messages of any size: measure, reserve, then encode in place.
  template <typename EncodeFn>
  bool EmitSized(uint32_t field, EncodeFn&& encode,
                 std::unique_lock<std::mutex>* wait_lock = nullptr) {
    SizeSink measure;
    encode(measure);
    const size_t body_size = measure.size();
    const size_t total = PacketSize(field, body_size);
    uint8_t* out = wait_lock != nullptr ? ReserveWaiting(total, *wait_lock) : Reserve(total);
    if (out == nullptr) return false;
    BufferSink sink(WriteFrame(out, field, body_size));
    encode(sink);
    Commit(total, field);
    return true;
  }

  // ---- Counters.
  uint64_t EventsWritten() const {
    uint64_t total = 0;
    for (size_t f = 0; f < kNumPacketFields; ++f) {
      if (!kKindCounterNames[f].empty()) total += packets[f].Get();
    }
    return total;
  }

  struct BuiltinCounter {
    std::string_view name;
    uint64_t value;
    Severity severity;
    bool always;  // Written even when zero.
  };

  // Writer counters as they stand (bytes_written as given: see kStatBytesWritten).
  std::array<BuiltinCounter, 12> Builtins(uint64_t bytes) const {
    return {{
        {kStatEventsWritten, EventsWritten(), Severity::kInfo, true},
        {kStatBytesWritten, bytes, Severity::kInfo, true},
        {kStatDroppedBufferFull, dropped_buffer_full.Get(), Severity::kDataLoss, true},
        {kStatDroppedWriteError, dropped_write_error.Get(), Severity::kDataLoss, true},
        {kStatBufferHighWater, buffer_high_water.Get(), Severity::kInfo, true},
        {kStatDroppedTooLarge, dropped_too_large.Get(), Severity::kDataLoss, false},
        {kStatDroppedAfterClose, dropped_after_close.Get(), Severity::kDataLoss, false},
        {kStatTimestampsClamped, timestamps_clamped.Get(), Severity::kInfo, false},
        {kStatInternFailed, intern_failed.Get(), Severity::kError, false},
        {kStatInternTableFull, intern_table_full.Get(), Severity::kInfo, false},
        {kStatPcBatchesSplit, pc_batches_split.Get(), Severity::kInfo, false},
        {kStatWriteErrors, write_errors.Get(), Severity::kError, false},
    }};
  }

  // The encoder of a Stats packet preceded by `bytes_before` bytes: the counters as they stand
  // now, copied, so that the measure and write passes encode the same thing.
  auto StatsEncoder(bool final, uint64_t timestamp_rel, uint64_t bytes_before) {
    // A copy of the collectors' counters: counters_mu must not be held while Close waits for
    // buffer space, or a thread in a Batch calling AddToCounter would deadlock with it.
    std::vector<std::pair<std::string, NamedCounter>> named_copy;
    try {
      std::lock_guard<std::mutex> counters_lock(counters_mu);
      named_copy.assign(named.begin(), named.end());
    } catch (...) {
      named_copy.clear();  // Out of memory: the writer's own counters still go out.
    }
    std::array<uint64_t, kNumPacketFields> packet_counts;
    for (size_t f = 0; f < kNumPacketFields; ++f) packet_counts[f] = packets[f].Get();
    return [this, final, timestamp_rel, builtins = Builtins(bytes_before),
            named_copy = std::move(named_copy), packet_counts](auto& s) {
      auto named_value = [&](std::string_view name) -> uint64_t {
        for (const auto& [n, c] : named_copy) {
          if (n == name) return c.value;
        }
        return 0;
      };
      using F = fields::Stats;
      using C = fields::StatCounter;
      s.Uint(F::kTimestampNs, timestamp_rel);
      s.Bool(F::kFinal, final);
      auto counter = [&](std::string_view name, uint64_t value, Severity severity) {
        wire::Nested(s, F::kCounters, [&](auto& m) {
          m.String(C::kName, name);
          m.Uint(C::kValue, value);
          m.EnumValue(C::kSeverity, severity);
        });
      };
      for (const BuiltinCounter& b : builtins) {
        const uint64_t value = b.value + named_value(b.name);
        if (value != 0 || b.always) counter(b.name, value, b.severity);
      }
      for (size_t f = 0; f < kNumPacketFields; ++f) {
        const uint64_t n = packet_counts[f];
        if (!kKindCounterNames[f].empty() && n != 0) counter(kKindCounterNames[f], n, Severity::kInfo);
      }
      for (const auto& [name, c] : named_copy) {
        if (IsBuiltin(name)) continue;
        counter(name, c.value, c.severity);
      }
    };
  }

  // With mu held. Periodic stats are dropped when the buffer is full; final ones wait.
  bool EmitStats(bool final, uint64_t timestamp_rel, std::unique_lock<std::mutex>* wait_lock) {
    buffer_high_water.Max(bytes_committed - bytes_done);
    // The Stats packet says how many bytes precede it, which is bytes_committed when it is
    // measured.
    return EmitSized(Packet::kStats, StatsEncoder(final, timestamp_rel, bytes_committed),
                     wait_lock);
  }

  bool IsBuiltin(std::string_view name) const {
    for (const BuiltinCounter& b : Builtins(0)) {
      if (b.name == name) return true;
    }
    return false;
  }

  // ---- Writer thread.
  void WriterMain();
  bool WriteAll(const uint8_t* data, size_t size, int* err) const {
    while (size > 0) {
      const ssize_t n = ::write(fd, data, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        *err = errno;
        return false;
      }
      if (n == 0) {
        *err = EIO;
        return false;
      }
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }
  void ReportWriteError(int err) {
    write_errors.Max(1);
    healthy.store(false, std::memory_order_relaxed);
    PrintLine("warpscope: cannot write trace " + path + ": " + ErrnoText(err) +
              "; tracing stopped, the program continues");
  }

  void ReportNoSpace(int err) {
    write_errors.Max(1);
    healthy.store(false, std::memory_order_relaxed);
    PrintLine("warpscope: no space left for trace " + path + " (" + ErrnoText(err) + ") after " +
              std::to_string(file_pos >> 10) +
              " KiB; recording stopped there and the trace ends with its statistics; the "
              "program continues");
  }

  // Writer thread: makes sure the next `size` bytes and the tail reserve have blocks. False
  // with *err set when the file system is full.
  bool ReserveBlocks(size_t size, int* err) {
    if (!reserve_supported) return true;
    if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(file_pos),
                    static_cast<off_t>(size + kTailReserveBytes)) == 0) {
      return true;
    }
    *err = errno;
    if (*err == ENOSPC || *err == EDQUOT || *err == EFBIG) return false;
    reserve_supported = false;  // EOPNOTSUPP, ENODEV and the like: write unreserved
    return true;
  }

  // Close, after the writer thread ended on a full disk: the final Stats and EndOfTrace go
  // into the reserved blocks (where the reservation could be made, they fit).
  void WriteTailAfterDiskFull(EndReason reason, uint64_t ts) {
    std::vector<uint8_t> tail;
    AppendPacket(&tail, Packet::kStats, StatsEncoder(/*final=*/true, ts, file_pos));
    AppendPacket(&tail, Packet::kEndOfTrace,
                 [&](auto& s) { EncodeEndOfTrace(s, ts, reason); });
    int err = 0;
    if (::lseek(fd, static_cast<off_t>(file_pos), SEEK_SET) < 0 ||
        !WriteAll(tail.data(), tail.size(), &err)) {
      // No room after all (no reservation on this file system): no half packet either.
      if (::ftruncate(fd, static_cast<off_t>(file_pos)) != 0) {
      }
      return;
    }
    file_pos += tail.size();
  }

  // Encodes one TracePacket into `out` (Close only; no chunk involved).
  template <typename EncodeFn>
  static void AppendPacket(std::vector<uint8_t>* out, uint32_t field, EncodeFn&& encode) {
    SizeSink measure;
    encode(measure);
    const size_t body_size = measure.size();
    const size_t at = out->size();
    out->resize(at + PacketSize(field, body_size));
    BufferSink sink(WriteFrame(out->data() + at, field, body_size));
    encode(sink);
  }
};

void TraceWriter::Impl::WriterMain() {
  using Clock = std::chrono::steady_clock;
  const auto never = Clock::time_point::max();
  auto next_flush = Clock::now() + flush_interval;
  auto next_stats = stats_interval.count() > 0 ? Clock::now() + stats_interval : never;
  std::vector<Chunk*> batch;
  batch.reserve(max_chunks);
  bool write_failed = false;  // The writer thread's view; published as `failed` under mu.

  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    writer_wake.wait_until(lock, std::min(next_flush, next_stats),
                           [&] { return !queue.empty() || flush_requested || stop; });
    const auto now = Clock::now();
    if (now >= next_stats && accepting) {
      EmitStats(/*final=*/false, RelTime(NowIn(clock_domain, time_base_ns)), nullptr);
      next_stats = now + stats_interval;
    }
    const bool stopping = stop;
    batch.swap(queue);  // Both keep capacity max_chunks.
    Chunk* partial = nullptr;
    size_t partial_end = 0;
    uint64_t partial_events = 0;
    if (flush_requested || stopping || now >= next_flush) {
      flush_requested = false;
      next_flush = now + flush_interval;
      if (current != nullptr && current->used > current->flushed) {
        partial = current;
        partial_end = current->used;
        partial_events = current->events;
      }
    }
    lock.unlock();

    // Producers only append past `used`, so the ranges written here do not change under us.
    uint64_t processed = 0;
    uint64_t discarded_events = 0;
    bool ran_out_of_space = false;
    auto write_out = [&](Chunk* c, size_t end, uint64_t events) {
      const size_t size = end - c->flushed;
      if (!write_failed) {
        int err = 0;
        if (ReserveBlocks(size, &err) && WriteAll(c->data.get() + c->flushed, size, &err)) {
          bytes_written.Add(size);
          file_pos += size;
        } else {
          write_failed = true;
          ran_out_of_space = err == ENOSPC || err == EDQUOT || err == EFBIG;
          // A write cut short leaves part of a packet: cut the file back to the last whole one.
          if (::ftruncate(fd, static_cast<off_t>(file_pos)) != 0) {
            // Not a regular file (a pipe, /dev/full): nothing to cut.
          }
          if (ran_out_of_space) {
            ReportNoSpace(err);
          } else {
            ReportWriteError(err);
          }
        }
      }
      if (write_failed) discarded_events += events - c->events_flushed;
      processed += size;
      c->flushed = end;
      c->events_flushed = events;
    };
    for (Chunk* c : batch) write_out(c, c->used, c->events);
    if (partial != nullptr) write_out(partial, partial_end, partial_events);

    lock.lock();
    for (Chunk* c : batch) {
      c->used = c->flushed = 0;
      c->events = c->events_flushed = 0;
      free_chunks.push_back(c);
    }
    batch.clear();
    bytes_done += processed;
    if (write_failed && !failed) {
      failed = true;
      accepting = false;
      disk_full = ran_out_of_space;
    }
    dropped_write_error.Add(discarded_events);
    progress.notify_all();
    // Close stops producers before setting `stop`, so after a pass that saw it nothing is left.
    if (stopping && queue.empty()) break;
  }
  writer_exited = true;
  if (stuck) {
    // Close gave up on this thread and left the file to it.
    ::close(fd);
    fd = -1;
  }
  progress.notify_all();
}

// ---------------------------------------------------------------------------------------

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<TraceWriter> TraceWriter::Open(const TraceWriterOptions& options,
                                               const HeaderRecord& header, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  if (options.path.empty()) {
    *error = "warpscope: no trace file name given; set the output name (-o)";
    return nullptr;
  }
  std::unique_ptr<Impl> impl;
  try {
    impl = std::make_unique<Impl>();
    impl->path = options.path;
    impl->time_base_ns = header.time_base_ns;
    impl->clock_domain = header.clock_domain;
    SizeSink header_size;
    EncodeHeader(header_size, header);
    impl->chunk_bytes = std::clamp<size_t>(options.chunk_bytes, kMinChunkBytes, size_t{1} << 30);
    impl->chunk_bytes =
        std::max(impl->chunk_bytes, PacketSize(Packet::kHeader, header_size.size()));
    impl->max_chunks = std::max<size_t>(2, options.max_buffered_bytes / impl->chunk_bytes);
    const uint32_t flush_ms = options.flush_interval_ms == 0 ? 500 : options.flush_interval_ms;
    impl->flush_interval = std::chrono::milliseconds(std::clamp<uint32_t>(flush_ms, 10, 1000));
    impl->stats_interval = std::chrono::milliseconds(options.stats_interval_ms);
    impl->close_timeout = std::chrono::milliseconds(std::max<uint32_t>(1, options.close_timeout_ms));
    impl->chunks.reserve(impl->max_chunks);
    impl->free_chunks.reserve(impl->max_chunks);
    impl->queue.reserve(impl->max_chunks);
  } catch (...) {
    *error = "warpscope: out of memory setting up the trace writer; tracing is off";
    return nullptr;
  }

  const int flags =
      O_WRONLY | O_CREAT | O_CLOEXEC | (options.force_overwrite ? O_TRUNC : O_EXCL);
  impl->fd = ::open(options.path.c_str(), flags, 0644);
  if (impl->fd < 0) {
    const int err = errno;
    struct stat st {};
    if (err == EISDIR || (err == EEXIST && ::stat(options.path.c_str(), &st) == 0 &&
                          S_ISDIR(st.st_mode))) {
      *error = "warpscope: cannot create trace " + options.path +
               ": it is a directory; give a file name (-o)";
    } else if (err == EEXIST) {
      *error = "warpscope: trace file " + options.path +
               " exists; pass -f/--force-overwrite or set WARPSCOPE_FORCE_OVERWRITE=1 to "
               "replace it, or choose another name (-o)";
    } else {
      *error = "warpscope: cannot create trace " + options.path + ": " + ErrnoText(err) +
               "; check that its directory exists and is writable, or choose another name (-o)";
    }
    return nullptr;
  }
  impl->created_file = !options.force_overwrite;

  auto fail = [&](const std::string& message) -> std::unique_ptr<TraceWriter> {
    ::close(impl->fd);
    if (impl->created_file) ::unlink(impl->path.c_str());
    *error = message;
    return nullptr;
  };

  {
    std::unique_lock<std::mutex> lock(impl->mu);
    if (!impl->EmitSized(Packet::kHeader, [&](auto& s) { EncodeHeader(s, header); })) {
      return fail("warpscope: out of memory for the trace buffer; tracing is off");
    }
    // The header goes to the file now, not with the first flush: a program that ends at
    // once with _exit or is killed still leaves a file that says what it is.
    Chunk* c = impl->current;
    int err = 0;
    if (!impl->ReserveBlocks(c->used, &err) || !impl->WriteAll(c->data.get(), c->used, &err)) {
      return fail("warpscope: cannot write trace " + options.path + ": " + ErrnoText(err) +
                  "; tracing is off");
    }
    impl->bytes_written.Add(c->used);
    impl->file_pos = c->used;
    impl->bytes_done = c->used;
    c->flushed = c->used;
    c->events_flushed = c->events;
  }

  // The writer thread blocks every signal: the host program's handlers must not run on it, and
  // a write to a closed pipe must return EPIPE rather than kill the process with SIGPIPE.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  try {
    Impl* raw = impl.get();
    impl->thread = std::make_unique<std::thread>([raw] {
      pthread_setname_np(pthread_self(), "ws-writer");
      raw->WriterMain();
    });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    return fail("warpscope: cannot start the trace writer thread; tracing is off");
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));
}

TraceWriter::~TraceWriter() {
  if (impl_ == nullptr) return;
  if (impl_->abandoned.load(std::memory_order_relaxed) || impl_->stuck) {
    // After fork: its mutexes may be held by threads that do not exist here and its condition
    // variables may count waiters that never wake; destroying them can block. After a stuck
    // Close the writer thread still runs on it. Leak instead.
    (void)impl_.release();
    return;
  }
  Close(EndReason::kExit, NowIn(impl_->clock_domain, impl_->time_base_ns));
}

void TraceWriter::Close(EndReason reason, uint64_t timestamp_ns) {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> close_lock(w.close_mu);
  if (w.closed) return;
  w.closed = true;
  {
    std::unique_lock<std::mutex> lock(w.mu);
    if (w.accepting) {
      w.accepting = false;  // Events from now on are dropped as after_close.
      const uint64_t ts = w.RelTime(timestamp_ns);
      w.EmitStats(/*final=*/true, ts, &lock);
      w.EmitSized(
          Packet::kEndOfTrace, [&](auto& s) { EncodeEndOfTrace(s, ts, reason); }, &lock);
    }
    w.stop = true;
    w.writer_wake.notify_one();
    // A write(2) that never returns (a FIFO nobody reads, a hung network mount) must not hang
    // the program at exit: give up when the writer thread makes no progress for a while.
    uint64_t last_done = w.bytes_done;
    auto deadline = std::chrono::steady_clock::now() + w.close_timeout;
    while (!w.writer_exited) {
      if (w.progress.wait_until(lock, deadline) != std::cv_status::timeout) continue;
      if (w.writer_exited) break;
      if (w.bytes_done == last_done) {
        w.stuck = true;
        break;
      }
      last_done = w.bytes_done;
      deadline = std::chrono::steady_clock::now() + w.close_timeout;
    }
  }
  if (w.stuck) {
    // The thread still uses the Impl and the fd: both are left to it (~TraceWriter leaks).
    w.healthy.store(false, std::memory_order_relaxed);
    PrintLine("warpscope: writing trace " + w.path +
              " makes no progress; giving up, the trace may be incomplete");
    w.thread->detach();
    return;
  }
  if (w.thread != nullptr) {
    w.thread->join();
    w.thread.reset();
  }
  if (w.fd >= 0 && w.disk_full && w.file_pos > 0) {
    w.WriteTailAfterDiskFull(reason, w.RelTime(timestamp_ns));
  }
  if (w.fd >= 0 && w.reserve_supported) {
    // Give the reserved blocks past the end back (KEEP_SIZE allocations outlive the close).
    ::fallocate(w.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(w.file_pos),
                static_cast<off_t>(Impl::kTailReserveBytes));
  }
  if (w.fd >= 0) {
    const bool had_error = !w.healthy.load(std::memory_order_relaxed);
    if (::close(w.fd) != 0 && !had_error && errno != EINTR) w.ReportWriteError(errno);
    w.fd = -1;
  }
}

void TraceWriter::Flush() {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(w.mu);
  // After Close began (stop) there is nothing to flush, and a stuck writer thread must not
  // hold this caller.
  if (w.failed || w.writer_exited || w.stop) return;
  const uint64_t target = w.bytes_committed;
  if (w.bytes_done >= target) return;
  w.flush_requested = true;
  w.writer_wake.notify_one();
  w.progress.wait(lock, [&] {
    return w.bytes_done >= target || w.failed || w.writer_exited || w.stop;
  });
}

void TraceWriter::AbandonAfterFork() { impl_->abandoned.store(true, std::memory_order_relaxed); }

bool TraceWriter::healthy() const {
  return impl_->healthy.load(std::memory_order_relaxed) &&
         !impl_->abandoned.load(std::memory_order_relaxed);
}

const std::string& TraceWriter::path() const { return impl_->path; }

void TraceWriter::AddToCounter(std::string_view name, uint64_t delta, Severity severity) {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  try {
    std::lock_guard<std::mutex> lock(w.counters_mu);
    auto it = w.named.find(name);
    if (it == w.named.end()) it = w.named.emplace(std::string(name), NamedCounter{}).first;
    it->second.value += delta;
    it->second.severity = severity;
  } catch (...) {
    // Out of memory for a new name: the update is lost; nothing else can be done here.
  }
}

void TraceWriter::SetCounter(std::string_view name, uint64_t value, Severity severity) {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  try {
    std::lock_guard<std::mutex> lock(w.counters_mu);
    auto it = w.named.find(name);
    if (it == w.named.end()) it = w.named.emplace(std::string(name), NamedCounter{}).first;
    it->second.value = value;
    it->second.severity = severity;
  } catch (...) {
    // As in AddToCounter.
  }
}

uint64_t TraceWriter::Counter(std::string_view name) const {
  const Impl& w = *impl_;
  uint64_t value = 0;
  for (const Impl::BuiltinCounter& b : w.Builtins(w.bytes_written.Get())) {
    if (b.name == name) value = b.value;
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

uint64_t TraceWriter::InternString(std::string_view value) {
  Batch batch(*this);
  return batch.InternString(value);
}
uint64_t TraceWriter::InternLaunchConfig(const LaunchConfigRecord& config) {
  Batch batch(*this);
  return batch.InternLaunchConfig(config);
}
uint64_t TraceWriter::InternThread(uint64_t cupti_thread_id, uint32_t os_tid,
                                   std::string_view name) {
  Batch batch(*this);
  return batch.InternThread(cupti_thread_id, os_tid, name);
}
bool TraceWriter::WriteNotice(Severity severity, std::string_view source,
                              std::string_view message, uint64_t timestamp_ns) {
  Batch batch(*this);
  return batch.WriteNotice(severity, source, message, timestamp_ns);
}

// ---------------------------------------------------------------------------------------
// Batch

TraceWriter::Batch::Batch(TraceWriter& writer) : writer_(writer) {
  if (!writer_.impl_->abandoned.load(std::memory_order_relaxed)) {
    writer_.impl_->mu.lock();
    locked_ = true;
  }
}

TraceWriter::Batch::~Batch() {
  if (locked_) writer_.impl_->mu.unlock();
}

uint64_t TraceWriter::Batch::InternString(std::string_view value) {
  using F = fields::InternedString;
  if (!locked_ || value.empty()) return 0;
  Impl& w = *writer_.impl_;
  if (auto it = w.strings.find(value); it != w.strings.end()) return it->second;
  if (w.RefuseIfClosed()) return 0;
  const uint64_t id = w.next_string_id;
  if (!w.EmitSized(Packet::kInternedString, [&](auto& s) {
        s.Uint(F::kId, id);
        s.String(F::kValue, value);
      })) {
    return 0;  // Not remembered: no later packet may refer to an id the file lacks.
  }
  ++w.next_string_id;
  // Remembered only after the packet is in the stream; if remembering fails the id is still
  // valid, and the next use writes the string again under a new id.
  if (w.string_bytes + value.size() > kMaxInternedStringBytes) {
    w.intern_table_full.Add(1);
    return id;
  }
  try {
    w.strings.emplace(std::string(value), id);
    w.string_bytes += value.size() + sizeof(std::string) + sizeof(uint64_t);
  } catch (...) {
    w.intern_failed.Add(1);
  }
  return id;
}

uint64_t TraceWriter::Batch::InternLaunchConfig(const LaunchConfigRecord& c) {
  using F = fields::LaunchConfig;
  if (!locked_) return 0;
  Impl& w = *writer_.impl_;
  if (auto it = w.configs.find(c); it != w.configs.end()) return it->second;
  const uint64_t id = w.next_config_id;
  if (!w.EmitSmall(Packet::kLaunchConfig, [&](BufferSink& s) {
        s.Uint(F::kId, id);
        s.Uint(F::kGridX, c.grid_x);
        s.Uint(F::kGridY, c.grid_y);
        s.Uint(F::kGridZ, c.grid_z);
        s.Uint(F::kBlockX, c.block_x);
        s.Uint(F::kBlockY, c.block_y);
        s.Uint(F::kBlockZ, c.block_z);
        s.Uint(F::kClusterX, c.cluster_x);
        s.Uint(F::kClusterY, c.cluster_y);
        s.Uint(F::kClusterZ, c.cluster_z);
        s.Uint(F::kRegistersPerThread, c.registers_per_thread);
        s.Uint(F::kStaticSharedMemory, c.static_shared_memory);
        s.Uint(F::kDynamicSharedMemory, c.dynamic_shared_memory);
        s.Uint(F::kLocalMemoryPerThread, c.local_memory_per_thread);
        s.Uint(F::kSharedMemoryExecuted, c.shared_memory_executed);
        s.Uint(F::kSharedMemoryConfig, c.shared_memory_config);
        s.Uint(F::kSharedMemoryCarveoutRequested, c.shared_memory_carveout_requested);
        s.Uint(F::kShmemLimitConfig, c.shmem_limit_config);
      })) {
    return 0;
  }
  ++w.next_config_id;
  if (w.configs.size() >= kMaxInternedConfigs) {
    w.intern_table_full.Add(1);
    return id;
  }
  try {
    w.configs.emplace(c, id);
  } catch (...) {
    w.intern_failed.Add(1);
  }
  return id;
}

uint64_t TraceWriter::Batch::InternThread(uint64_t cupti_thread_id, uint32_t os_tid,
                                          std::string_view name) {
  using F = fields::ThreadInfo;
  if (!locked_) return 0;
  Impl& w = *writer_.impl_;
  // A thread known only by its tid gets a key that no pthread id (a pointer) takes.
  const uint64_t key = cupti_thread_id != 0 ? cupti_thread_id : (uint64_t{1} << 63) | os_tid;
  if (auto it = w.threads.find(key); it != w.threads.end()) return it->second;
  if (w.RefuseIfClosed()) return 0;
  const uint64_t id = w.next_thread_id;
  if (!w.EmitSized(Packet::kThread, [&](auto& s) {
        s.Uint(F::kId, id);
        s.Uint(F::kCuptiThreadId, cupti_thread_id);
        s.Uint(F::kOsTid, os_tid);
        s.String(F::kName, name);
      })) {
    return 0;
  }
  ++w.next_thread_id;
  if (w.threads.size() >= kMaxInternedThreads) {
    w.intern_table_full.Add(1);
    return id;
  }
  try {
    w.threads.emplace(key, id);
  } catch (...) {
    w.intern_failed.Add(1);
  }
  return id;
}

bool TraceWriter::Batch::Write(const DeviceRecord& r) {
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  return w.EmitSized(Packet::kDevice, [&](auto& s) { EncodeDevice(s, r); });
}

bool TraceWriter::Batch::Write(const ContextRecord& r) {
  using F = fields::ContextInfo;
  if (!locked_) return false;
  return writer_.impl_->EmitSmall(Packet::kContext, [&](BufferSink& s) {
    s.Uint(F::kId, r.id);
    s.Uint(F::kDeviceId, r.device_id);
    s.Bool(F::kIsGreen, r.is_green);
    s.Uint(F::kSmCount, r.sm_count);
  });
}

bool TraceWriter::Batch::Write(const KernelRecord& r) {
  using F = fields::KernelEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kKernel, [&](BufferSink& s) {
    s.Uint(F::kNameId, r.name_id);
    s.Uint(F::kMangledNameId, r.mangled_name_id);
    s.Uint(F::kLaunchConfigId, r.launch_config_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Uint(F::kGraphId, r.graph_id);
    s.Uint(F::kGraphNodeId, r.graph_node_id);
    s.Uint(F::kGridId, r.grid_id);
  });
}

bool TraceWriter::Batch::Write(const MemcpyRecord& r) {
  using F = fields::MemcpyEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kMemcpy, [&](BufferSink& s) {
    s.EnumValue(F::kCopyKind, r.copy_kind);
    s.EnumValue(F::kSrcKind, r.src_kind);
    s.EnumValue(F::kDstKind, r.dst_kind);
    s.Uint(F::kBytes, r.bytes);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Bool(F::kIsAsync, r.is_async);
    s.Uint(F::kSrcDeviceId, r.src_device_id);
    s.Uint(F::kDstDeviceId, r.dst_device_id);
    s.Uint(F::kGraphNodeId, r.graph_node_id);
  });
}

bool TraceWriter::Batch::Write(const MemsetRecord& r) {
  using F = fields::MemsetEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kMemset, [&](BufferSink& s) {
    s.Uint(F::kValue, r.value);
    s.Uint(F::kBytes, r.bytes);
    s.EnumValue(F::kMemoryKind, r.memory_kind);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Bool(F::kIsAsync, r.is_async);
  });
}

bool TraceWriter::Batch::Write(const SyncRecord& r) {
  using F = fields::SyncEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kSynchronization, [&](BufferSink& s) {
    s.EnumValue(F::kKind, r.kind);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCudaEventId, r.cuda_event_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Uint(F::kThreadId, r.thread_id);
  });
}

bool TraceWriter::Batch::Write(const ApiCallRecord& r) {
  using F = fields::ApiCallEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kApiCall, [&](BufferSink& s) {
    s.EnumValue(F::kDomain, r.domain);
    s.Uint(F::kNameId, r.name_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kThreadId, r.thread_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
    s.Uint(F::kResult, r.result);
    s.Uint(F::kCallbackId, r.callback_id);
  });
}

bool TraceWriter::Batch::Write(const GraphLaunchRecord& r) {
  using F = fields::GraphLaunchEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kGraphLaunch, [&](BufferSink& s) {
    s.Uint(F::kGraphId, r.graph_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kStreamId, r.stream_id);
    s.Uint(F::kCorrelationId, r.correlation_id);
  });
}

bool TraceWriter::Batch::Write(const OverheadRecord& r) {
  using F = fields::OverheadEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kOverhead, [&](BufferSink& s) {
    s.Uint(F::kKindId, r.kind_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kThreadId, r.thread_id);
  });
}

bool TraceWriter::Batch::Write(const NvtxRangeRecord& r) {
  using F = fields::NvtxRangeEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSmall(Packet::kNvtxRange, [&](BufferSink& s) {
    s.Uint(F::kNameId, r.name_id);
    s.Uint(F::kDomainId, r.domain_id);
    s.Uint(F::kCategory, r.category);
    s.Uint(F::kColor, r.color);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.Uint(F::kThreadId, r.thread_id);
    s.Uint(F::kEndThreadId, r.end_thread_id);
    s.Bool(F::kIsPushPop, r.is_push_pop);
    s.Uint(F::kDepth, r.depth);
  });
}

bool TraceWriter::Batch::Write(const NvtxMarkRecord& r) {
  using F = fields::NvtxMarkEvent;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t timestamp = w.RelTime(r.timestamp_ns);
  return w.EmitSmall(Packet::kNvtxMark, [&](BufferSink& s) {
    s.Uint(F::kNameId, r.name_id);
    s.Uint(F::kDomainId, r.domain_id);
    s.Uint(F::kCategory, r.category);
    s.Uint(F::kColor, r.color);
    s.Uint(F::kTimestampNs, timestamp);
    s.Uint(F::kThreadId, r.thread_id);
  });
}

bool TraceWriter::Batch::Write(const PmMetricSetRecord& r) {
  using F = fields::PmMetricSet;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  return w.EmitSized(Packet::kPmMetricSet, [&](auto& s) {
    s.Uint(F::kId, r.id);
    s.Uint(F::kDeviceId, r.device_id);
    for (const std::string& name : r.metric_names) s.RepeatedString(F::kMetricNames, name);
    s.Uint(F::kIntervalNs, r.interval_ns);
    s.String(F::kChipName, r.chip_name);
    s.Bytes(F::kCounterAvailability,
            std::span<const uint8_t>(
                reinterpret_cast<const uint8_t*>(r.counter_availability.data()),
                r.counter_availability.size()));
  });
}

bool TraceWriter::Batch::Write(const PmCounterDataRecord& r) {
  using F = fields::PmCounterData;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const size_t n = std::min({r.sample_index.size(), r.start_ns.size(), r.end_ns.size()});
  std::vector<uint64_t>& starts = w.scratch_starts;
  std::vector<uint64_t>& durations = w.scratch_durations;
  starts.resize(n);
  durations.resize(n);
  for (size_t i = 0; i < n; ++i) {
    starts[i] = w.RelTime(r.start_ns[i]);
    durations[i] = w.Duration(r.start_ns[i], r.end_ns[i]);
  }
  return w.EmitSized(Packet::kPmCounterData, [&](auto& s) {
    s.Uint(F::kMetricSetId, r.metric_set_id);
    s.Bytes(F::kImage, r.image);
    s.PackedVarint(F::kSampleIndex, std::span<const uint32_t>(r.sample_index.data(), n));
    s.PackedVarint(F::kStartNs, std::span<const uint64_t>(starts));
    s.PackedVarint(F::kDurationNs, std::span<const uint64_t>(durations));
  });
}

bool TraceWriter::Batch::Write(const PmSampleRecord& r) {
  using F = fields::PmSample;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const uint64_t start = w.RelTime(r.start_ns);
  const uint64_t duration = w.Duration(r.start_ns, r.end_ns);
  return w.EmitSized(Packet::kPmSample, [&](auto& s) {
    s.Uint(F::kMetricSetId, r.metric_set_id);
    s.Uint(F::kStartNs, start);
    s.Uint(F::kDurationNs, duration);
    s.PackedDouble(F::kValues, std::span<const double>(r.values));
  });
}

bool TraceWriter::Batch::Write(const PcStallReasonsRecord& r) {
  using F = fields::PcStallReasons;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  return w.EmitSized(Packet::kPcStallReasons, [&](auto& s) {
    s.Uint(F::kDeviceId, r.device_id);
    s.PackedVarint(F::kIndex, std::span<const uint32_t>(r.index));
    for (const std::string& name : r.name) s.RepeatedString(F::kName, name);
  });
}

bool TraceWriter::Batch::Write(const PcSampleBatchRecord& r) {
  using F = fields::PcSampleBatch;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const uint64_t timestamp = w.RelTime(r.timestamp_ns);
  auto encode_head = [&](auto& s, bool first) {
    s.Uint(F::kDeviceId, r.device_id);
    s.Uint(F::kContextId, r.context_id);
    s.Uint(F::kTimestampNs, timestamp);
    if (first) {
      s.Uint(F::kTotalSamples, r.total_samples);
      s.Uint(F::kDroppedSamples, r.dropped_samples);
      s.Uint(F::kNonUserKernelSamples, r.non_user_kernel_samples);
      s.Bool(F::kHardwareBufferFull, r.hardware_buffer_full);
    } else {
      s.Bool(F::kContinuation, true);
    }
  };
  auto encode_part = [&](bool first, size_t begin, size_t end) {
    return w.EmitSized(Packet::kPcSamples, [&](auto& s) {
      encode_head(s, first);
      for (size_t i = begin; i < end; ++i) {
        wire::Nested(s, F::kRecords, [&](auto& m) { EncodePcSampleRecord(m, r.records[i]); });
      }
    });
  };

  SizeSink whole;
  encode_head(whole, true);
  for (const PcSampleRecord& rec : r.records) whole.AddPayload(PcSampleRecordFieldSize(rec));
  if (PacketSize(Packet::kPcSamples, whole.size()) <= w.chunk_bytes) {
    return encode_part(true, 0, r.records.size());
  }

  // Too big for one chunk: as many records per packet as fit, in order.
  w.pc_batches_split.Add(1);
  const size_t max_body = MaxBodyIn(Packet::kPcSamples, w.chunk_bytes);
  bool all_written = true;
  bool first = true;
  size_t i = 0;
  const size_t n = r.records.size();
  while (i < n || first) {
    SizeSink head;
    encode_head(head, first);
    size_t body = head.size();
    size_t j = i;
    while (j < n) {
      const size_t record_size = PcSampleRecordFieldSize(r.records[j]);
      if (body + record_size > max_body) break;
      body += record_size;
      ++j;
    }
    if (j == i && i < n) {  // This record alone does not fit in a chunk.
      w.dropped_too_large.Add(1);
      all_written = false;
      ++i;
      continue;
    }
    all_written &= encode_part(first, i, j);
    first = false;
    i = j;
  }
  return all_written;
}

bool TraceWriter::Batch::Write(const CubinImageRecord& r) {
  using F = fields::CubinImage;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const auto* image = static_cast<const uint8_t*>(r.image);
  auto encode_part = [&](auto& s, size_t offset, size_t size) {
    s.Uint(F::kCrc, r.crc);
    s.Uint(F::kDeviceId, r.device_id);
    s.Bytes(F::kImage, image + offset, size);
    s.Uint(F::kOffset, offset);
    s.Uint(F::kTotalBytes, r.size);
  };
  // Parts as large as a chunk takes: the head (crc, device, offset, total) is at most 44
  // bytes and the image's length prefix 1 + 5.
  const size_t max_body = MaxBodyIn(Packet::kCubin, w.chunk_bytes);
  const size_t max_part = max_body > 64 ? max_body - 64 : 0;
  if (max_part == 0) return false;
  bool all_written = true;
  size_t offset = 0;
  do {
    const size_t part = std::min(max_part, r.size - offset);
    all_written &= w.EmitSized(Packet::kCubin, [&](auto& s) { encode_part(s, offset, part); });
    offset += part;
  } while (offset < r.size && all_written);
  return all_written;
}

bool TraceWriter::Batch::Write(const CaptureWindowEdgeRecord& r) {
  using F = fields::CaptureWindowEdge;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  const uint64_t timestamp = w.RelTime(r.timestamp_ns);
  return w.EmitSmall(Packet::kCaptureWindow, [&](BufferSink& s) {
    s.Uint(F::kWindowId, r.window_id);
    s.Bool(F::kBegin, r.begin);
    s.Uint(F::kTimestampNs, timestamp);
    s.EnumValue(F::kTrigger, r.trigger);
  });
}

bool TraceWriter::Batch::WriteNotice(Severity severity, std::string_view source,
                                     std::string_view message, uint64_t timestamp_ns) {
  using F = fields::Notice;
  if (!locked_) return false;
  Impl& w = *writer_.impl_;
  if (w.RefuseIfClosed()) return false;
  const uint64_t timestamp = w.RelTime(timestamp_ns);
  return w.EmitSized(Packet::kNotice, [&](auto& s) {
    s.Uint(F::kTimestampNs, timestamp);
    s.EnumValue(F::kSeverity, severity);
    s.String(F::kSource, source);
    s.String(F::kMessage, message);
  });
}

// ---------------------------------------------------------------------------------------

bool ExpandOutputPattern(std::string_view pattern, uint32_t pid, std::string_view hostname,
                         const std::function<const char*(const char*)>& getenv_fn,
                         const std::function<bool(const std::string&)>& file_exists,
                         std::string* out, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  try {
    auto fail = [&](std::string_view why) {
      *error = "warpscope: output name " + QuoteValue(pattern) + ": " + std::string(why);
      return false;
    };
    // The text between %n escapes; the sequence number goes between segments.
    std::vector<std::string> segments(1);
    // Where the last path component starts and whether it has a literal '.' after its first
    // character: what decides if ".wst" is appended (substituted text never does).
    bool component_has_dot = false;
    bool component_empty = true;
    auto append = [&](std::string_view text, bool literal) {
      for (char c : text) {
        segments.back() += c;
        if (c == '/') {
          component_has_dot = false;
          component_empty = true;
          continue;
        }
        if (literal && c == '.' && !component_empty) component_has_dot = true;
        component_empty = false;
      }
    };
    for (size_t i = 0; i < pattern.size(); ++i) {
      const char c = pattern[i];
      if (c != '%') {
        append(std::string_view(&pattern[i], 1), true);
        continue;
      }
      if (i + 1 == pattern.size()) {
        return fail("ends with a lone '%'; write %% for a literal '%'");
      }
      const char escape = pattern[++i];
      switch (escape) {
        case 'p':
          append(std::to_string(pid), false);
          break;
        case 'h':
          append(hostname, false);
          break;
        case '%':
          append("%", true);
          break;
        case 'n':
          segments.emplace_back();
          component_empty = false;
          break;
        case 'q': {
          const size_t close = pattern.find('}', i + 1);
          if (i + 1 >= pattern.size() || pattern[i + 1] != '{' || close == std::string_view::npos) {
            return fail("unterminated %q{; write %q{VARIABLE}");
          }
          const std::string name(pattern.substr(i + 2, close - (i + 2)));
          if (name.empty()) return fail("empty %q{}; write %q{VARIABLE}");
          const char* value = getenv_fn ? getenv_fn(name.c_str()) : nullptr;
          if (value != nullptr) append(value, false);
          i = close;
          break;
        }
        default:
          return fail(std::string("unknown escape %") + escape +
                      "; use %p, %h, %q{VAR}, %n or %%");
      }
    }
    const std::string_view extension = component_has_dot ? "" : ".wst";
    if (segments.size() == 1) {
      *out = segments[0] + std::string(extension);
      return true;
    }
    for (uint32_t n = 1; n <= 1000000; ++n) {
      const std::string number = std::to_string(n);
      std::string candidate = segments[0];
      for (size_t s = 1; s < segments.size(); ++s) candidate += number + segments[s];
      candidate += extension;
      if (!file_exists || !file_exists(candidate)) {
        *out = std::move(candidate);
        return true;
      }
    }
    return fail("%n found no free number up to 1000000; remove old traces or pick a new name");
  } catch (...) {
    *error = "warpscope: cannot expand the output name (out of memory)";
    return false;
  }
}

}  // namespace warpscope
