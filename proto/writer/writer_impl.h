// TraceWriter::Impl, the writer's state, shared by the files that each do one of its jobs:
// chunk_pool.cc (room for packets), record_writers.cc (records into packets),
// string_interning.cc, writer_stats.cc, writer_thread.cc (the file) and trace_writer.cc (open,
// flush, close). Internal to proto/writer.
#ifndef WARPSCOPE_PROTO_WRITER_WRITER_IMPL_H_
#define WARPSCOPE_PROTO_WRITER_WRITER_IMPL_H_

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "proto/writer/kept_definitions.h"
#include "proto/writer/packet_framing.h"
#include "proto/writer/string_interning.h"
#include "proto/writer/trace_writer.h"
#include "proto/writer/wire_format.h"
#include "proto/writer/writer_stats.h"

namespace warpscope {
namespace writer_internal {

struct Chunk {
  std::unique_ptr<uint8_t[]> data;
  size_t used = 0;             // Bytes of whole packets; guarded by Impl::mu.
  uint64_t events = 0;         // Packets in [0, used); guarded by Impl::mu.
  size_t flushed = 0;          // Bytes already written; the writer thread's own.
  uint64_t events_flushed = 0;  // Packets already written; the writer thread's own.
  // The last chunk of a file (StartNextFile): the writer thread moves to the next file after
  // it. Guarded by Impl::mu until queued.
  bool ends_file = false;
  // Ring mode: absolute times (the ring clock) when the chunk was taken, just before its first
  // commit, and when it was handed to the ring, after its last. Guarded by Impl::mu.
  uint64_t first_commit_ns = 0;
  uint64_t last_commit_ns = 0;

  // Empty again, for the free list.
  void Reset() {
    used = flushed = 0;
    events = events_flushed = 0;
    ends_file = false;
    first_commit_ns = last_commit_ns = 0;
  }
};

// The flight recorder's chunks, oldest first: a fixed-capacity circular list (no allocation
// after Init).
class ChunkRing {
 public:
  void Init(size_t capacity) { slots_.assign(capacity, nullptr); }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  Chunk* front() const { return slots_[head_]; }
  Chunk* at(size_t i) const { return slots_[(head_ + i) % slots_.size()]; }
  void push_back(Chunk* c) { slots_[(head_ + size_++) % slots_.size()] = c; }
  void push_front(Chunk* c) {
    head_ = (head_ + slots_.size() - 1) % slots_.size();
    slots_[head_] = c;
    ++size_;
  }
  Chunk* pop_front() {
    Chunk* c = slots_[head_];
    head_ = (head_ + 1) % slots_.size();
    --size_;
    return c;
  }

 private:
  std::vector<Chunk*> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

// What StartNextFile hands the writer thread: the file to go on in, and what it begins with
// after the Header.
struct NextFile {
  NextFile() = default;
  ~NextFile();  // Closes fd if still held.
  NextFile(const NextFile&) = delete;
  NextFile& operator=(const NextFile&) = delete;
  int fd = -1;
  std::string path;
  bool created = false;
  bool regular_file = false;
  dev_t device = 0;
  ino_t inode = 0;
  DefinitionsSnapshot definitions;
};

enum class DropCause { kClosed, kWriteError, kTooLarge, kBufferFull };

// strerror_r's text for errno `err`.
std::string ErrnoText(int err);
// One write(2) to stderr so that lines from several threads do not interleave.
void PrintLine(const std::string& line);
// Now in `domain`'s clock; `fallback` for synthetic time, which has no clock to read.
uint64_t NowIn(ClockDomain domain, uint64_t fallback);
// Creates a trace file at `path` as Open does (O_NOFOLLOW; O_EXCL unless force_overwrite);
// -1 with a one-line *error. *created: it did not exist before.
int CreateTraceFileAt(const std::string& path, bool force_overwrite, bool* created,
                      std::string* error);
// write(2) until all is written; false with *err set.
bool WriteAllTo(int fd, const uint8_t* data, size_t size, int* err);

}  // namespace writer_internal

struct TraceWriter::Impl {
  using BufferSink = wire::BufferSink;
  using BuiltinCounters = writer_internal::BuiltinCounters;
  using Chunk = writer_internal::Chunk;
  using DropCause = writer_internal::DropCause;
  using NamedCounter = writer_internal::NamedCounter;
  using RelaxedCounter = writer_internal::RelaxedCounter;
  using SizeSink = wire::SizeSink;
  using StatsSnapshot = writer_internal::StatsSnapshot;

  // Set in Open, then read-only; the writer thread changes the file's (path to file_inode)
  // when it moves to the next file.
  std::string path;
  int fd = -1;
  bool created_file = false;  // Open made the file (and removes it if it fails later).
  // remove_if_no_work, and what Close checks before removing: the file Open got is a regular
  // one, and this one (`path` may have been replaced since).
  bool remove_if_no_work = false;
  bool regular_file = false;
  dev_t file_device = 0;
  ino_t file_inode = 0;
  bool removed = false;  // Close removed the file.
  uint64_t time_base_ns = 0;
  ClockDomain clock_domain = ClockDomain::kUnspecified;
  size_t chunk_bytes = 0;
  size_t max_chunks = 0;
  std::chrono::milliseconds flush_interval{500};
  std::chrono::milliseconds stats_interval{1000};
  std::chrono::milliseconds close_timeout{10000};
  bool force_overwrite = false;
  std::vector<uint8_t> header_packet;  // Encoded, for the files after the first.
  // keep_definitions (kept_definitions.h); the store itself is guarded by mu.
  bool keep_definitions = false;
  // Flight recorder (ring_ns > 0): no file; the writer thread only moves and ages chunks.
  bool ring_mode = false;
  uint64_t ring_ns = 0;
  std::function<uint64_t()> ring_clock;

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

  writer_internal::InternTables interned;  // string_interning.cc
  writer_internal::KeptDefinitions kept{0};  // kept_definitions.h; bound set in Open
  // The current file's share of the stream, for its Stats (bytes before them): the stream
  // bytes before the file began and what the file began with (Header and definitions).
  uint64_t file_committed_base = 0;
  uint64_t file_prefix_bytes = 0;
  std::unique_ptr<writer_internal::NextFile> next_file;  // Until the writer thread takes it.
  // Ring mode (flight_ring.cc).
  writer_internal::ChunkRing ring;
  uint64_t ring_held_bytes = 0;
  std::vector<uint64_t> scratch_starts;     // PmCounterData times, relative
  std::vector<uint64_t> scratch_durations;

  // Updated under mu (bytes_written: by the writer thread alone); read anywhere.
  std::array<RelaxedCounter, writer_internal::kNumPacketFields> packets;
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
  RelaxedCounter definitions_kept_bytes;
  RelaxedCounter definitions_not_kept;
  RelaxedCounter ring_evicted_events;
  RelaxedCounter ring_dumps;
  RelaxedCounter ring_held_high_water;

  // Collectors' counters. Lock order: mu before counters_mu.
  mutable std::mutex counters_mu;
  std::map<std::string, NamedCounter, std::less<>> named;

  std::mutex close_mu;  // Serializes Close, StartNextFile, DumpRing; guards `closed`.
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

  // ---- Chunks (all with mu held; chunk_pool.cc).
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
  Chunk* AcquireChunk();
  void SubmitCurrent();
  // Room for `size` bytes in the current chunk, or nullptr with *cause set.
  uint8_t* ReserveSpace(size_t size, DropCause* cause);
  uint8_t* Reserve(size_t size) {
    if (current != nullptr && chunk_bytes - current->used >= size) [[likely]] {
      return current->data.get() + current->used;
    }
    return ReserveSlow(size);
  }
  uint8_t* ReserveSlow(size_t size);
  // For the last packets of Close: waits for the writer thread to free a chunk rather than
  // dropping them; gives up when the writer thread makes no progress for close_timeout.
  uint8_t* ReserveWaiting(size_t size, std::unique_lock<std::mutex>& lock);
  // The packet of `size` bytes being committed at current->used is a definition: keeps a copy
  // (kept_definitions.h). True when the packet is thereby committed (a ring keeps kept
  // definitions out of its chunks, so that evicting a chunk loses none); false when the caller
  // still commits it to the chunk.
  bool KeepDefinition(size_t size, uint32_t field);

  // ---- The current file (next_file.cc).
  // Bytes of the current file up to the stream's end, as its Stats say.
  uint64_t FileBytesCommitted() const {
    return bytes_committed - file_committed_base + file_prefix_bytes;
  }

  // ---- Flight-recorder ring (flight_ring.cc; with mu held).
  uint64_t RingNow() const;
  void HandToRing(Chunk* c);
  // Takes the oldest ring chunk for reuse when the pool is used up; nullptr if none.
  Chunk* EvictOldest();
  // Hands a partial chunk over (at the flush interval), frees chunks older than ring_ns.
  void AgeRing(bool flush_due);
  // The writer thread of a ring: AgeRing every flush interval until Close; no I/O.
  void RingWriterMain();

  void Commit(size_t size, uint32_t field) {
    if (keep_definitions && writer_internal::IsDefinition(field)) [[unlikely]] {
      if (KeepDefinition(size, field)) return;
    }
    current->used += size;
    ++current->events;
    bytes_committed += size;
    packets[field].Add(1);
  }

  // Fixed-shape messages: encode into a stack buffer, then copy with the exact frame.
  template <typename EncodeFn>
  bool EmitSmall(uint32_t field, EncodeFn&& encode) {
    if (RefuseIfClosed()) return false;
    uint8_t body[writer_internal::kSmallBodyBytes];
    BufferSink sink(body);
    encode(sink);
    const size_t body_size = sink.size();
    const size_t total = writer_internal::PacketSize(field, body_size);
    uint8_t* out = Reserve(total);
    if (out == nullptr) return false;
    out = writer_internal::WriteFrame(out, field, body_size);
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
    const size_t total = writer_internal::PacketSize(field, body_size);
    uint8_t* out = wait_lock != nullptr ? ReserveWaiting(total, *wait_lock) : Reserve(total);
    if (out == nullptr) return false;
    BufferSink sink(writer_internal::WriteFrame(out, field, body_size));
    encode(sink);
    Commit(total, field);
    return true;
  }

  // ---- Counters (writer_stats.cc).
  uint64_t EventsWritten() const;
  // Whether the trace holds work (remove_if_no_work in trace_writer.h), or lost events that
  // may have been work.
  bool HoldsWork() const;
  // Writer counters as they stand (bytes_written as given: see stats::kWriterBytesWritten).
  BuiltinCounters Builtins(uint64_t bytes) const;
  // The counters of a Stats packet preceded by `bytes_before` bytes, as they stand now.
  StatsSnapshot SnapshotStats(uint64_t bytes_before) const;
  // With mu held. Periodic stats are dropped when the buffer is full; final ones wait.
  bool EmitStats(bool final, uint64_t timestamp_rel, std::unique_lock<std::mutex>* wait_lock);

  // ---- Writer thread and file (writer_thread.cc).
  // What one pass of the writer thread did; write_failed stays set once a write failed (the
  // thread's view, published as `failed` under mu).
  struct WriterPass {
    bool write_failed = false;
    uint64_t processed = 0;         // Bytes written or discarded in this pass.
    uint64_t discarded_events = 0;  // Events discarded in this pass.
    bool ran_out_of_space = false;  // This pass failed on a full disk.
  };
  void WriterMain();
  void WriteRange(Chunk* c, size_t end, uint64_t events, WriterPass* pass);
  // Ends the old file and begins `next` (Header, definitions); next_file.cc.
  void SwitchFile(writer_internal::NextFile& next, WriterPass* pass);
  bool WriteAll(const uint8_t* data, size_t size, int* err) const {
    return writer_internal::WriteAllTo(fd, data, size, err);
  }
  // Appends to the file; nothing (false) after a failure in this pass, which it reports.
  bool AppendToFile(const uint8_t* data, size_t size, WriterPass* pass);
  void ReportWriteError(int err);
  void ReportNoSpace(int err);
  // Writer thread: makes sure the next `size` bytes and the tail reserve have blocks. False
  // with *err set when the file system is full.
  bool ReserveBlocks(size_t size, int* err);
  // Close, after the writer thread ended on a full disk: the final Stats and EndOfTrace go
  // into the reserved blocks (where the reservation could be made, they fit).
  void WriteTailAfterDiskFull(EndReason reason, uint64_t ts, uint32_t signal);

  // flight_ring.cc: the live memory blocks a dump writes back (DumpRing's `live`).
  void EncodeLiveMemory(const LiveMemory& live, uint64_t before, std::vector<uint8_t>* out,
                        writer_internal::PacketCounts* counts);
  // Encodes one TracePacket into `out` (Close only; no chunk involved).
  template <typename EncodeFn>
  static void AppendPacket(std::vector<uint8_t>* out, uint32_t field, EncodeFn&& encode) {
    SizeSink measure;
    encode(measure);
    const size_t body_size = measure.size();
    const size_t at = out->size();
    out->resize(at + writer_internal::PacketSize(field, body_size));
    BufferSink sink(writer_internal::WriteFrame(out->data() + at, field, body_size));
    encode(sink);
  }
};

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_WRITER_WRITER_IMPL_H_
