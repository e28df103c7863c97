// The writer thread and the file: every flush interval (or when chunks are full, or on
// Flush and Close) it appends the chunks handed over, and the filled part of the current one,
// to the file outside the writer's lock, moving to the next file after the chunk that ends
// one (next_file.cc); it reserves disk blocks ahead so that a full disk stops recording
// between whole packets, and reports I/O errors in one `warpscope:` line.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proto/writer/writer_impl.h"
#include "warpscope/v1/trace_encoders.h"

namespace warpscope {
namespace writer_internal {

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

bool WriteAllTo(int fd, const uint8_t* data, size_t size, int* err) {
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

}  // namespace writer_internal

using writer_internal::Chunk;
using writer_internal::EncodeEndOfTrace;
using writer_internal::ErrnoText;
using writer_internal::NowIn;
using writer_internal::Packet;
using writer_internal::PrintLine;

void TraceWriter::Impl::WriterMain() {
  if (ring_mode) return RingWriterMain();
  using Clock = std::chrono::steady_clock;
  const auto never = Clock::time_point::max();
  auto next_flush = Clock::now() + flush_interval;
  auto next_stats = stats_interval.count() > 0 ? Clock::now() + stats_interval : never;
  std::vector<Chunk*> batch;
  batch.reserve(max_chunks);
  WriterPass pass;

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
    // StartNextFile queued the last chunk of a file with the file that follows.
    std::unique_ptr<writer_internal::NextFile> switching;
    if (next_file != nullptr &&
        std::any_of(batch.begin(), batch.end(), [](const Chunk* c) { return c->ends_file; })) {
      switching = std::move(next_file);
    }
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
    pass.processed = 0;
    pass.discarded_events = 0;
    pass.ran_out_of_space = false;
    for (Chunk* c : batch) {
      WriteRange(c, c->used, c->events, &pass);
      if (c->ends_file && switching != nullptr) {
        SwitchFile(*switching, &pass);
        switching.reset();
      }
    }
    if (partial != nullptr) WriteRange(partial, partial_end, partial_events, &pass);

    lock.lock();
    for (Chunk* c : batch) {
      c->Reset();
      free_chunks.push_back(c);
    }
    batch.clear();
    bytes_done += pass.processed;
    if (pass.write_failed && !failed) {
      failed = true;
      accepting = false;
      disk_full = pass.ran_out_of_space;
    }
    dropped_write_error.Add(pass.discarded_events);
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

// Writes c's bytes from `flushed` to `end` (events: packets up to `end`), or after a failure
// discards them and counts their events.
void TraceWriter::Impl::WriteRange(Chunk* c, size_t end, uint64_t events, WriterPass* pass) {
  const size_t size = end - c->flushed;
  if (!AppendToFile(c->data.get() + c->flushed, size, pass)) {
    pass->discarded_events += events - c->events_flushed;
  }
  pass->processed += size;
  c->flushed = end;
  c->events_flushed = events;
}

bool TraceWriter::Impl::AppendToFile(const uint8_t* data, size_t size, WriterPass* pass) {
  if (pass->write_failed) return false;
  int err = 0;
  if (ReserveBlocks(size, &err) && WriteAll(data, size, &err)) {
    bytes_written.Add(size);
    file_pos += size;
    return true;
  }
  pass->write_failed = true;
  pass->ran_out_of_space = err == ENOSPC || err == EDQUOT || err == EFBIG;
  // A write cut short leaves part of a packet: cut the file back to the last whole one.
  if (::ftruncate(fd, static_cast<off_t>(file_pos)) != 0) {
    // Not a regular file (a pipe, /dev/full): nothing to cut.
  }
  if (pass->ran_out_of_space) {
    ReportNoSpace(err);
  } else {
    ReportWriteError(err);
  }
  return false;
}

void TraceWriter::Impl::ReportWriteError(int err) {
  write_errors.Max(1);
  healthy.store(false, std::memory_order_relaxed);
  PrintLine("warpscope: cannot write trace " + path + ": " + ErrnoText(err) +
            "; tracing stopped, the program continues");
}

void TraceWriter::Impl::ReportNoSpace(int err) {
  write_errors.Max(1);
  healthy.store(false, std::memory_order_relaxed);
  PrintLine("warpscope: no space left for trace " + path + " (" + ErrnoText(err) + ") after " +
            std::to_string(file_pos >> 10) +
            " KiB; recording stopped there and the trace ends with its statistics; the "
            "program continues");
}

bool TraceWriter::Impl::ReserveBlocks(size_t size, int* err) {
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

void TraceWriter::Impl::WriteTailAfterDiskFull(EndReason reason, uint64_t ts, uint32_t signal) {
  std::vector<uint8_t> tail;
  const StatsSnapshot stats = SnapshotStats(file_pos);
  AppendPacket(&tail, Packet::kStats,
               [&](auto& s) { writer_internal::EncodeStats(s, stats, /*final=*/true, ts); });
  AppendPacket(&tail, Packet::kEndOfTrace,
               [&](auto& s) { EncodeEndOfTrace(s, ts, reason, signal); });
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


}  // namespace warpscope
