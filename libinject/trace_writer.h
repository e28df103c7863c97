// TraceWriter: encodes trace records as protobuf wire format straight into fixed-size chunks
// and hands full chunks to one writer thread that appends them to the .wst file.
//
// Rules it keeps (docs/DESIGN rules 3-5): no allocation per event, bounded memory (events
// that do not fit are dropped and counted), packets never straddle chunks so the file is a
// sequence of whole packets after every write, periodic flush, and I/O errors stop writing
// with one `warpscope:` line instead of stopping the host program. It links nothing but
// the C++ standard library, so it can live inside the injected libwarpscope.so.
#ifndef WARPSCOPE_LIBINJECT_TRACE_WRITER_H_
#define WARPSCOPE_LIBINJECT_TRACE_WRITER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "libinject/trace_records.h"

namespace warpscope {

struct TraceWriterOptions {
  std::string path;                       // Final file name (already expanded).
  bool force_overwrite = false;           // Else an existing file is an error.
  size_t chunk_bytes = 1 << 20;           // Size of one buffer chunk.
  size_t max_buffered_bytes = 64 << 20;   // Memory bound for all chunks together.
  uint32_t flush_interval_ms = 500;       // Partial chunks reach the file at least this often.
  uint32_t stats_interval_ms = 1000;      // Periodic Stats packets (0 = only the final one).
};

// Counters every trace carries (names as written in Stats packets; docs/format.md).
inline constexpr std::string_view kStatEventsWritten = "writer.events_written";
inline constexpr std::string_view kStatBytesWritten = "writer.bytes_written";
inline constexpr std::string_view kStatDroppedBufferFull = "writer.events_dropped.buffer_full";
inline constexpr std::string_view kStatDroppedWriteError = "writer.events_dropped.write_error";
inline constexpr std::string_view kStatBufferHighWater = "writer.buffer_high_water_bytes";

class TraceWriter {
 public:
  // Creates the file and writes the header. On failure returns nullptr and sets *error to a
  // one-line message that starts with "warpscope:".
  static std::unique_ptr<TraceWriter> Open(const TraceWriterOptions& options,
                                           const HeaderRecord& header, std::string* error);
  ~TraceWriter();  // Close(EndReason::kExit) if not closed.
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // A Batch holds the writer's lock while a collector writes many records (one CUPTI buffer,
  // one PM decode); all record methods are also available one at a time on TraceWriter.
  // Every Write* returns false when the record was dropped (and counted).
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
    bool Write(const SyncRecord& r);
    bool Write(const ApiCallRecord& r);
    bool Write(const GraphLaunchRecord& r);
    bool Write(const OverheadRecord& r);
    bool Write(const NvtxRangeRecord& r);
    bool Write(const NvtxMarkRecord& r);
    bool Write(const PmMetricSetRecord& r);
    bool Write(const PmSampleRecord& r);
    bool Write(const PcStallReasonsRecord& r);
    bool Write(const PcSampleBatchRecord& r);
    bool Write(const CaptureWindowEdgeRecord& r);
    bool WriteNotice(Severity severity, std::string_view source, std::string_view message,
                     uint64_t timestamp_ns);

   private:
    TraceWriter& writer_;
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
  // "cupti.dropped_records", "collector_errors.pm_sampling", ...). Thread-safe.
  void AddToCounter(std::string_view name, uint64_t delta, Severity severity);
  // Sets a counter to an absolute value (high-water marks).
  void SetCounter(std::string_view name, uint64_t value, Severity severity);
  uint64_t Counter(std::string_view name) const;

  // Hands the current partial chunk to the writer thread and waits until everything handed
  // over so far is in the file (or writing has failed).
  void Flush();

  // Writes final stats and the EndOfTrace packet, flushes, stops the writer thread and
  // closes the file. Idempotent; later writes are dropped and counted.
  void Close(EndReason reason, uint64_t timestamp_ns);

  // In a child process after fork(): the writer thread does not exist there and the file
  // belongs to the parent. Marks this object dead without touching the file or joining.
  void AbandonAfterFork();

  // False once an I/O error stopped writing.
  bool healthy() const;
  const std::string& path() const;

  struct Impl;

 private:
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Expands an output name pattern: %p pid, %h host name, %q{VAR} environment variable (empty
// when unset), %n the smallest sequence number >= 1 that names no existing file, %% a '%'.
// Appends ".wst" when the result has no extension. Returns false and sets *error (one line)
// for an unknown escape or an unterminated %q{.
bool ExpandOutputPattern(std::string_view pattern, uint32_t pid, std::string_view hostname,
                         const std::function<const char*(const char*)>& getenv_fn,
                         const std::function<bool(const std::string&)>& file_exists,
                         std::string* out, std::string* error);

}  // namespace warpscope

#endif  // WARPSCOPE_LIBINJECT_TRACE_WRITER_H_
