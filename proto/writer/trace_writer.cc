// TraceWriter: encodes records as protobuf wire format into fixed-size chunks under one lock,
// and a writer thread appends full (and, periodically, partial) chunks to the file.
//
// Life of a byte: Batch::Write encodes a message body into a stack buffer, Reserve finds room
// for the whole packet in the current chunk (a packet never straddles two chunks), Commit
// makes it part of the stream. A full chunk is queued for the writer thread, which writes it
// outside the lock and returns it to the free list. Every flush_interval the writer thread
// also writes the filled part of the current chunk, so a killed process leaves whole packets.
//
// The jobs live in one file each: record_writers.cc (records into packets), chunk_pool.cc,
// string_interning.cc, writer_stats.cc, writer_thread.cc (the thread and the file),
// kept_definitions.cc, next_file.cc (StartNextFile), flight_ring.cc (the flight recorder),
// output_name.cc (file names); this file opens, flushes and closes the writer.
#include "proto/writer/trace_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>

#include "proto/writer/writer_impl.h"
#include "warpscope/v1/trace_encoders.h"

namespace warpscope {
namespace {

using wire::SizeSink;
using writer_internal::Chunk;
using writer_internal::EncodeEndOfTrace;
using writer_internal::EncodeHeader;
using writer_internal::ErrnoText;
using writer_internal::NowIn;
using writer_internal::Packet;
using writer_internal::PacketSize;
using writer_internal::PrintLine;

// The writer's state sized from the options (chunks are allocated later, on first need);
// nullptr when out of memory.
std::unique_ptr<TraceWriter::Impl> NewImpl(const TraceWriterOptions& options,
                                           const HeaderRecord& header) {
  try {
    auto impl = std::make_unique<TraceWriter::Impl>();
    impl->path = options.path;
    impl->time_base_ns = header.time_base_ns;
    impl->clock_domain = header.clock_domain;
    SizeSink header_size;
    EncodeHeader(header_size, header, kFormatMajor, kFormatMinor);
    impl->chunk_bytes = std::clamp<size_t>(options.chunk_bytes, kMinChunkBytes, size_t{1} << 30);
    impl->ring_mode = options.ring_ns > 0;
    if (impl->ring_mode) {
      // Small chunks: the ring gives up and ages out its oldest events a chunk at a time.
      impl->chunk_bytes = std::min(
          impl->chunk_bytes, std::max<size_t>(64 << 10, options.max_buffered_bytes / 256));
    }
    impl->chunk_bytes =
        std::max(impl->chunk_bytes, PacketSize(Packet::kHeader, header_size.size()));
    impl->max_chunks = std::max<size_t>(2, options.max_buffered_bytes / impl->chunk_bytes);
    const uint32_t flush_ms = options.flush_interval_ms == 0 ? 500 : options.flush_interval_ms;
    impl->flush_interval = std::chrono::milliseconds(std::clamp<uint32_t>(flush_ms, 10, 1000));
    impl->stats_interval = std::chrono::milliseconds(options.stats_interval_ms);
    impl->close_timeout = std::chrono::milliseconds(std::max<uint32_t>(1, options.close_timeout_ms));
    impl->force_overwrite = options.force_overwrite;
    impl->keep_definitions = options.keep_definitions || impl->ring_mode;
    impl->kept = writer_internal::KeptDefinitions(options.max_kept_definition_bytes);
    impl->ring_ns = options.ring_ns;
    impl->ring_clock = options.ring_clock;
    if (impl->ring_mode) impl->ring.Init(impl->max_chunks);
    impl->chunks.reserve(impl->max_chunks);
    impl->free_chunks.reserve(impl->max_chunks);
    impl->queue.reserve(impl->max_chunks);
    return impl;
  } catch (...) {
    return nullptr;
  }
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The name to create when options.path exists: rename_if_exists's answer, or options.path.
std::string NameIfTaken(const TraceWriterOptions& options) {
  try {
    std::string other = options.rename_if_exists(options.path);
    return other.empty() ? options.path : other;
  } catch (...) {
    return options.path;  // Out of memory: the usual rules decide.
  }
}

// O_NOFOLLOW: never write through a symbolic link. A link planted at a predictable name in
// a shared directory (warpscope_<pid>.wst in /tmp) would otherwise have -f truncate
// whatever it points at. O_EXCL already refuses a link; -f's O_TRUNC would follow one.
constexpr int kCreateFlags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW;

// Creates the trace file at *path (options.path, or the name rename_if_exists gave); on
// failure -1 and *error says why and what to do. *created: the file did not exist before.
int CreateTraceFile(const TraceWriterOptions& options, std::string* path, bool* created,
                    std::string* error) {
  *path = options.path;
  if (options.rename_if_exists) {
    const int fd = ::open(path->c_str(), kCreateFlags | O_EXCL, 0644);
    const int err = errno;
    *created = fd >= 0;
    if (fd >= 0) return fd;
    if (err == EEXIST && !IsDirectory(*path)) *path = NameIfTaken(options);
  }
  return writer_internal::CreateTraceFileAt(*path, options.force_overwrite, created, error);
}

}  // namespace

int writer_internal::CreateTraceFileAt(const std::string& path_in, bool force_overwrite,
                                       bool* created, std::string* error) {
  const std::string* path = &path_in;
  const int fd = ::open(path->c_str(), kCreateFlags | (force_overwrite ? O_TRUNC : O_EXCL), 0644);
  *created = fd >= 0 && !force_overwrite;
  if (fd >= 0) return fd;
  const int err = errno;
  struct stat link {};
  if (err == ELOOP && ::lstat(path->c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    *error = "warpscope: trace path " + *path +
             " is a symbolic link; warpscope does not write through links (one in a shared "
             "directory could point anywhere): remove it or choose another name (-o)";
  } else if (err == EISDIR || (err == EEXIST && IsDirectory(*path))) {
    *error = "warpscope: cannot create trace " + *path +
             ": it is a directory; give a file name (-o)";
  } else if (err == EEXIST) {
    *error = "warpscope: trace file " + *path +
             " exists; pass -f/--force-overwrite or set WARPSCOPE_FORCE_OVERWRITE=1 to "
             "replace it, or choose another name (-o)";
  } else {
    *error = "warpscope: cannot create trace " + *path + ": " + ErrnoText(err) +
             "; check that its directory exists and is writable, or choose another name (-o)";
  }
  return -1;
}

namespace {

// Removes the file at Close when remove_if_no_work asks for it and it holds no work; only the
// regular file Open got, and only while `path` still names it.
void RemoveIfNoWork(TraceWriter::Impl& w, EndReason reason) {
  if (!w.remove_if_no_work || !w.regular_file || w.HoldsWork()) return;
  if (reason != EndReason::kExit && reason != EndReason::kSignal) return;
  struct stat st {};
  if (::stat(w.path.c_str(), &st) != 0 || st.st_dev != w.file_device ||
      st.st_ino != w.file_inode) {
    return;
  }
  w.removed = ::unlink(w.path.c_str()) == 0;
}

// Encodes the header and writes it to the file at once, not with the first flush: a program
// that ends at once with _exit or is killed still leaves a file that says what it is.
bool WriteHeaderNow(TraceWriter::Impl& w, const HeaderRecord& header, std::string* error) {
  std::unique_lock<std::mutex> lock(w.mu);
  if (!w.EmitSized(Packet::kHeader,
                   [&](auto& s) { EncodeHeader(s, header, kFormatMajor, kFormatMinor); })) {
    *error = "warpscope: out of memory for the trace buffer; tracing is off";
    return false;
  }
  Chunk* c = w.current;
  try {
    w.header_packet.assign(c->data.get(), c->data.get() + c->used);
  } catch (...) {
    *error = "warpscope: out of memory for the trace buffer; tracing is off";
    return false;
  }
  int err = 0;
  if (!w.ReserveBlocks(c->used, &err) || !w.WriteAll(c->data.get(), c->used, &err)) {
    *error = "warpscope: cannot write trace " + w.path + ": " + ErrnoText(err) +
             "; tracing is off";
    return false;
  }
  w.bytes_written.Add(c->used);
  w.file_pos = c->used;
  w.bytes_done = c->used;
  c->flushed = c->used;
  c->events_flushed = c->events;
  return true;
}

bool EncodeHeaderOnly(TraceWriter::Impl& w, const HeaderRecord& header, std::string* error) {
  try {
    TraceWriter::Impl::AppendPacket(&w.header_packet, Packet::kHeader, [&](auto& s) {
      EncodeHeader(s, header, kFormatMajor, kFormatMinor);
    });
    return true;
  } catch (...) {
    *error = "warpscope: out of memory setting up the trace writer; tracing is off";
    return false;
  }
}

// Starts the writer thread with every signal blocked: the host program's handlers must not
// run on it, and a write to a closed pipe must return EPIPE rather than kill the process with
// SIGPIPE.
bool StartWriterThread(TraceWriter::Impl& w) {
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  bool started = true;
  try {
    TraceWriter::Impl* raw = &w;
    w.thread = std::make_unique<std::thread>([raw] {
      pthread_setname_np(pthread_self(), "ws-writer");
      raw->WriterMain();
    });
  } catch (...) {
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return started;
}

}  // namespace

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<TraceWriter> TraceWriter::Open(const TraceWriterOptions& options,
                                               const HeaderRecord& header, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  if (options.path.empty()) {
    *error = "warpscope: no trace file name given; set the output name (-o)";
    return nullptr;
  }
  std::unique_ptr<Impl> impl = NewImpl(options, header);
  if (impl == nullptr) {
    *error = "warpscope: out of memory setting up the trace writer; tracing is off";
    return nullptr;
  }
  if (impl->ring_mode) {
    // A flight recorder touches no file until a dump: the header is only encoded.
    if (!EncodeHeaderOnly(*impl, header, error)) return nullptr;
    if (!StartWriterThread(*impl)) {
      *error = "warpscope: cannot start the trace writer thread; tracing is off";
      return nullptr;
    }
    return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));
  }
  impl->fd = CreateTraceFile(options, &impl->path, &impl->created_file, error);
  if (impl->fd < 0) return nullptr;
  impl->remove_if_no_work = options.remove_if_no_work;
  if (struct stat st {}; ::fstat(impl->fd, &st) == 0) {
    impl->regular_file = S_ISREG(st.st_mode);
    impl->file_device = st.st_dev;
    impl->file_inode = st.st_ino;
  }

  auto fail = [&]() -> std::unique_ptr<TraceWriter> {
    ::close(impl->fd);
    if (impl->created_file) ::unlink(impl->path.c_str());
    return nullptr;
  };
  if (!WriteHeaderNow(*impl, header, error)) return fail();
  if (!StartWriterThread(*impl)) {
    *error = "warpscope: cannot start the trace writer thread; tracing is off";
    return fail();
  }
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

void TraceWriter::Close(EndReason reason, uint64_t timestamp_ns, uint32_t signal) {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> close_lock(w.close_mu);
  if (w.closed) return;
  w.closed = true;
  {
    std::unique_lock<std::mutex> lock(w.mu);
    if (w.accepting && w.ring_mode) {
      w.accepting = false;  // A ring makes no file: nothing to end.
    } else if (w.accepting) {
      w.accepting = false;  // Events from now on are dropped as after_close.
      const uint64_t ts = w.RelTime(timestamp_ns);
      w.EmitStats(/*final=*/true, ts, &lock);
      w.EmitSized(
          Packet::kEndOfTrace, [&](auto& s) { EncodeEndOfTrace(s, ts, reason, signal); }, &lock);
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
    w.WriteTailAfterDiskFull(reason, w.RelTime(timestamp_ns), signal);
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
    RemoveIfNoWork(w, reason);
  }
}

void TraceWriter::Flush() {
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> lock(w.mu);
  if (w.ring_mode) {
    if (!w.stop) w.AgeRing(/*flush_due=*/true);
    return;
  }
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

bool TraceWriter::removed() const { return impl_->removed; }

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

}  // namespace warpscope
