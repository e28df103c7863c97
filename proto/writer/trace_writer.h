// TraceWriter: encodes trace records as protobuf wire format straight into fixed-size chunks
// and hands full chunks to one writer thread that appends them to the .wst file.
//
// Rules it keeps (docs/architecture.md, rules 3-5): no allocation per event, bounded memory (events
// that do not fit are dropped and counted), packets never straddle chunks so the file is a
// sequence of whole packets after every write, periodic flush, and I/O errors stop writing
// with one `warpscope:` line instead of stopping the host program. It links nothing but
// the C++ standard library, so it can live inside the injected libwarpscope.so.
#ifndef WARPSCOPE_PROTO_WRITER_TRACE_WRITER_H_
#define WARPSCOPE_PROTO_WRITER_TRACE_WRITER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "proto/writer/trace_records.h"

namespace warpscope {

struct TraceWriterOptions {
  std::string path;                       // Final file name (already expanded).
  bool force_overwrite = false;           // Else an existing file is an error.
  // Size of one buffer chunk; at least kMinChunkBytes, and grown to hold the Header packet.
  // No packet is larger than a chunk (PcSampleBatch packets are split to fit).
  size_t chunk_bytes = 1 << 20;
  size_t max_buffered_bytes = 64 << 20;   // Memory bound for all chunks (at least 2 chunks).
  uint32_t flush_interval_ms = 500;       // Partial chunks reach the file at least this often
                                          // (clamped to [10, 1000]; 0 = 500).
  uint32_t stats_interval_ms = 1000;      // Periodic Stats packets (0 = only the final one).
  // Close gives up (one stderr line, the trace may be incomplete) when the writer thread has
  // written nothing for this long, so that a write(2) that never returns cannot hang the
  // program at exit.
  uint32_t close_timeout_ms = 10000;
  // When `path` exists already: the name to create instead (which follows the rules above),
  // or empty to go on as without this (force_overwrite replaces the file, else an error).
  // Unset: only force_overwrite decides. A process of a job uses it to step aside from a
  // name another process of the same run took.
  std::function<std::string(const std::string& path)> rename_if_exists;
  // At a Close for kExit or kSignal, remove the file when it holds no work: no kernel, copy,
  // memset, graph launch, allocation or free, NVTX range or mark (NCCL's calls included), PM
  // or PC sample, no
  // event lost (writer drops, CUPTI's dropped records), and no NVTX range left open. Only a
  // regular file that this writer created or truncated, and still at `path`, is removed
  // (removed() says it was).
  bool remove_if_no_work = false;

  // Keep every definition (a packet that later packets refer to by id: interned strings,
  // launch configs, threads, devices, contexts, stack frames and stacks, PM metric sets, PC
  // stall reasons, cubins) also in memory, as encoded, so that StartNextFile can begin a new
  // file with all of them. Up to max_kept_definition_bytes (writer.definitions_kept_bytes);
  // past it nothing more is kept (writer.definitions_not_kept): files begun after that may
  // refer to ids they lack.
  bool keep_definitions = false;
  size_t max_kept_definition_bytes = 64 << 20;

  // Flight recorder: when > 0, Open creates no file and nothing is written until DumpRing.
  // The events of about the last ring_ns ns are held in memory instead (within
  // max_buffered_bytes: when the memory is used up the oldest are given up, counted in
  // writer.ring_evicted_events). Definitions are kept whatever keep_definitions says. Chunks
  // are then at most max(64 KiB, max_buffered_bytes / 256), so that the oldest events go in
  // small steps.
  uint64_t ring_ns = 0;
  // The clock ring ages are measured on (absolute ns in the Header's clock domain); unset:
  // that domain's clock (under synthetic time nothing then ages out). For tests.
  std::function<uint64_t()> ring_clock;
};

inline constexpr size_t kMinChunkBytes = 4096;

// The writer's own counters (events written and dropped, bytes, ...) are the "writer." entries
// of the stats table (stats_table.h): Counter() takes their names. From Counter(),
// writer.bytes_written is the bytes the writer thread has written so far.

class TraceWriter {
 public:
  // Creates the file and writes the header (with a ring: neither). On failure returns nullptr and sets *error to a
  // one-line message that starts with "warpscope:".
  static std::unique_ptr<TraceWriter> Open(const TraceWriterOptions& options,
                                           const HeaderRecord& header, std::string* error);
  ~TraceWriter();  // Close(EndReason::kExit) if not closed.
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // A Batch holds the writer's lock while a collector writes many records (one CUPTI buffer,
  // one PM decode); all record methods are also available one at a time on TraceWriter.
  // Every Write* returns false when the record was dropped (and counted). While a Batch is
  // alive, its thread may call the counter methods below but no other TraceWriter method.
  //
  // Timestamps: records carry absolute ns; events get `start - Header.time_base_ns` and
  // `end - start` (negatives become 0 and count under writer.timestamps_clamped).
  // InternString("") is 0 ("no string") and writes nothing. InternThread keys on
  // cupti_thread_id (os_tid when that is 0); the first name given wins.
  // A PcSampleBatch too large for one chunk becomes several packets with the same device,
  // context and timestamp; the totals (total/dropped/non-user samples, buffer full) are only
  // in the first, so that summing over packets stays right.
  class Batch {
   public:
    explicit Batch(TraceWriter& writer);
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    uint64_t InternString(std::string_view value);  // 0 when it could not be written.
    uint64_t InternLaunchConfig(const LaunchConfigRecord& config);
    uint64_t InternThread(uint64_t cupti_thread_id, uint32_t os_tid = 0,
                          std::string_view name = {});

    bool Write(const DeviceRecord& r);
    bool Write(const ContextRecord& r);
    bool Write(const KernelRecord& r);
    bool Write(const MemcpyRecord& r);
    bool Write(const MemsetRecord& r);
    bool Write(const MemoryRecord& r);
    bool Write(const SyncRecord& r);
    bool Write(const ApiCallRecord& r);
    bool Write(const GraphLaunchRecord& r);
    bool Write(const OverheadRecord& r);
    bool Write(const NvtxRangeRecord& r);
    bool Write(const NvtxMarkRecord& r);
    bool Write(const NcclCallRecord& r);
    bool Write(const StackFrameRecord& r);
    bool Write(const CallStackRecord& r);
    bool Write(const ApiStackRecord& r);
    bool Write(const PmMetricSetRecord& r);
    bool Write(const PmSampleRecord& r);
    bool Write(const PmCounterDataRecord& r);
    bool Write(const PcStallReasonsRecord& r);
    bool Write(const PcSampleBatchRecord& r);
    // A cubin larger than a chunk becomes several CubinImage packets (offset, total_bytes);
    // false when any part was dropped (the reader then treats the cubin as incomplete).
    bool Write(const CubinImageRecord& r);
    bool Write(const CaptureWindowEdgeRecord& r);
    bool WriteNotice(Severity severity, std::string_view source, std::string_view message,
                     uint64_t timestamp_ns);

   private:
    TraceWriter& writer_;
    bool locked_ = false;  // False after AbandonAfterFork: every call is then a no-op.
  };

  uint64_t InternString(std::string_view value);
  uint64_t InternLaunchConfig(const LaunchConfigRecord& config);
  uint64_t InternThread(uint64_t cupti_thread_id, uint32_t os_tid = 0,
                        std::string_view name = {});
  template <typename Record>
  bool Write(const Record& r) {
    Batch batch(*this);
    return batch.Write(r);
  }
  bool WriteNotice(Severity severity, std::string_view source, std::string_view message,
                   uint64_t timestamp_ns);

  // Adds to a named counter that goes into every Stats packet (collectors' own counters:
  // "cupti.dropped_records", "collector_errors.pm_sampling", ...). Thread-safe, and does not
  // take the writer's lock (callable inside a Batch). A name equal to a writer counter adds to
  // it.
  void AddToCounter(std::string_view name, uint64_t delta, Severity severity);
  // Sets a counter to an absolute value (high-water marks).
  void SetCounter(std::string_view name, uint64_t value, Severity severity);
  uint64_t Counter(std::string_view name) const;

  // Hands the current partial chunk to the writer thread and waits until everything handed
  // over so far is in the file (or writing has failed). With a ring: hands the partial chunk
  // to the ring and lets go of what is older than ring_ns, as the writer thread does at each
  // flush interval; no I/O.
  void Flush();

  // Writes final stats and the EndOfTrace packet, flushes, stops the writer thread and
  // closes the file (and removes it when it holds no work, with remove_if_no_work). With a
  // ring, only stops: what is held is let go and no file is made (dump before, if wanted).
  // Idempotent; later writes are dropped and counted. Never blocks longer than
  // close_timeout_ms without the writer thread making progress. `signal`: the signal that
  // ends the process (kSignal, kCrash), written beside the reason; 0 where none.
  void Close(EndReason reason, uint64_t timestamp_ns, uint32_t signal = 0);

  // Ends the current file as Close does (final Stats, EndOfTrace with kNextFile) and goes on
  // in a new one at `path`, made as Open makes its file (never through a symbolic link; an
  // existing file is an error unless force_overwrite; rename_if_exists is not used) and
  // beginning as Open's did: the same Header (the same time base), then every definition
  // kept. Records written from other threads meanwhile land whole in one file or the other,
  // in order. In each file the writer.events_written and writer.bytes_written counters
  // describe that file; the other counters count from Open.
  // Needs keep_definitions and no ring. Returns once the switch is queued (the writer thread
  // finishes the old file first; a write error in the new one is reported like any other).
  // On failure (the file cannot be made, the writer is closed or writing failed) returns
  // false with a one-line `warpscope:` message in *error and writing goes on in the old file.
  bool StartNextFile(const std::string& path, uint64_t timestamp_ns, std::string* error);

  // Flight recorder (ring_ns > 0): writes the events held now to a new file at `path` (made
  // as StartNextFile makes one): the Header, every definition kept, CaptureWindowEdge begin
  // (window_id = dump_id, trigger kFlightRecorder, at the first commit of the oldest event
  // held), the held events in the order they were written, CaptureWindowEdge end (`trigger`,
  // at timestamp_ns), a final Stats whose writer.events_written and writer.bytes_written
  // describe the dump, and EndOfTrace(kDump). The held events are then let go: the next dump
  // holds only newer ones. The file is written on the calling thread without the writer's
  // lock, so recording goes on meanwhile (in what memory the dump does not hold). Records
  // still on their way to the writer (CUPTI's activity buffers) are not in the dump: flush
  // them first. Not async-signal-safe. On failure returns false with a one-line `warpscope:`
  // message in *error; a file it made is removed and the events stay held for the next dump.
  //
  // `live`: what the program held when the dump was asked for (the out-of-memory dump): the
  // blocks whose time comes before the oldest event held are written, with their stacks
  // (ApiStackEvents of their correlation ids), between the definitions and the begin edge,
  // so that a dump tells what was live even after the ring let their allocations go.
  struct LiveMemory {
    std::span<const MemoryRecord> blocks;
    std::span<const ApiStackRecord> stacks;
  };
  bool DumpRing(const std::string& path, CaptureTrigger trigger, uint32_t dump_id,
                uint64_t timestamp_ns, std::string* error, const LiveMemory& live = {});

  // In a child process after fork(): the writer thread does not exist there and the file
  // belongs to the parent. Marks this object dead without touching the file, the locks (a
  // parent thread may have held them at fork) or the thread; the destructor then leaks the
  // internals on purpose (destroying a condition variable that had waiters can block).
  void AbandonAfterFork();

  // False once an I/O error stopped writing.
  bool healthy() const;
  // The file written: options.path, or the name rename_if_exists gave, or StartNextFile's
  // (not to be read while StartNextFile runs on another thread).
  const std::string& path() const;
  // Close removed the file, which held no work (remove_if_no_work).
  bool removed() const;

  struct Impl;

 private:
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace warpscope

#endif  // WARPSCOPE_PROTO_WRITER_TRACE_WRITER_H_
