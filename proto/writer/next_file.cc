// The next file: StartNextFile ends the current file in the stream as Close does (final Stats,
// EndOfTrace) and marks the chunk that holds the end; the writer thread, which writes chunks
// in stream order, moves to the next file right after that chunk and begins it with the
// Header and the kept definitions. Records are never held back: whatever is committed before
// the end goes to the old file, whatever after to the new one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "proto/writer/writer_impl.h"
#include "warpscope/v1/trace_encoders.h"

namespace warpscope {

using wire::SizeSink;
using writer_internal::EncodeEndOfTrace;
using writer_internal::ErrnoText;
using writer_internal::NextFile;
using writer_internal::Packet;
using writer_internal::PacketSize;
using writer_internal::PrintLine;

namespace writer_internal {

NextFile::~NextFile() {
  if (fd >= 0) ::close(fd);
}

}  // namespace writer_internal

namespace {

// Whether `bytes` of packets fit without waiting: in the current chunk, or in a chunk to be had.
bool RoomFor(const TraceWriter::Impl& w, size_t bytes) {
  if (w.current != nullptr && w.chunk_bytes - w.current->used >= bytes) return true;
  return bytes <= w.chunk_bytes && (!w.free_chunks.empty() || w.chunks.size() < w.max_chunks);
}

// Waits (letting go of mu) until done(); false when writing failed or stopped, or the writer
// thread made no progress for close_timeout.
template <typename Done>
bool WaitForWriter(TraceWriter::Impl& w, std::unique_lock<std::mutex>& lock, Done done) {
  uint64_t last_done = w.bytes_done;
  auto deadline = std::chrono::steady_clock::now() + w.close_timeout;
  while (!done()) {
    if (w.failed || w.writer_exited || w.stop) return false;
    if (w.progress.wait_until(lock, deadline) != std::cv_status::timeout) continue;
    if (done()) break;
    if (w.bytes_done == last_done) return false;
    last_done = w.bytes_done;
    deadline = std::chrono::steady_clock::now() + w.close_timeout;
  }
  return true;
}

// Ends the current file in the stream: final Stats and EndOfTrace(kNextFile), committed
// without letting go of the lock between them so that no other record lands between or after
// them. False when writing stopped or no room came.
bool EndFileInStream(TraceWriter::Impl& w, std::unique_lock<std::mutex>& lock, uint64_t ts) {
  SizeSink end_size;
  EncodeEndOfTrace(end_size, ts, EndReason::kNextFile, 0);
  for (;;) {
    if (!w.accepting) return false;
    const writer_internal::StatsSnapshot stats = w.SnapshotStats(w.FileBytesCommitted());
    SizeSink stats_size;
    writer_internal::EncodeStats(stats_size, stats, /*final=*/true, ts);
    const size_t bytes = PacketSize(Packet::kStats, stats_size.size()) +
                         PacketSize(Packet::kEndOfTrace, end_size.size());
    if (RoomFor(w, bytes)) {
      w.EmitSized(Packet::kStats,
                  [&](auto& s) { writer_internal::EncodeStats(s, stats, /*final=*/true, ts); });
      return w.EmitSized(Packet::kEndOfTrace,
                         [&](auto& s) { EncodeEndOfTrace(s, ts, EndReason::kNextFile, 0); });
    }
    if (!WaitForWriter(w, lock, [&] { return RoomFor(w, bytes) || !w.accepting; })) return false;
  }
}

}  // namespace

bool TraceWriter::StartNextFile(const std::string& path, uint64_t timestamp_ns,
                                std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  Impl& w = *impl_;
  if (w.abandoned.load(std::memory_order_relaxed)) return false;
  std::lock_guard<std::mutex> close_lock(w.close_mu);
  if (w.ring_mode || !w.keep_definitions) {
    *error = "warpscope: cannot begin trace file " + path +
             ": the writer was opened without keep_definitions or as a flight recorder";
    return false;
  }
  if (w.closed) {
    *error = "warpscope: cannot begin trace file " + path + ": the trace writer is closed";
    return false;
  }
  std::unique_ptr<NextFile> next;
  try {
    next = std::make_unique<NextFile>();
    next->path = path;
  } catch (...) {
    *error = "warpscope: out of memory beginning trace file " + path + "; recording goes on in " +
             w.path;
    return false;
  }
  next->fd = writer_internal::CreateTraceFileAt(path, w.force_overwrite, &next->created, error);
  if (next->fd < 0) return false;
  if (struct stat st {}; ::fstat(next->fd, &st) == 0) {
    next->regular_file = S_ISREG(st.st_mode);
    next->device = st.st_dev;
    next->inode = st.st_ino;
  }
  auto give_up = [&](const std::string& why) {
    ::close(next->fd);
    next->fd = -1;
    if (next->created) ::unlink(path.c_str());
    *error = "warpscope: cannot begin trace file " + path + ": " + why;
    return false;
  };

  std::unique_lock<std::mutex> lock(w.mu);
  // One switch at a time: the previous one must have reached the writer thread.
  if (!WaitForWriter(w, lock, [&] { return w.next_file == nullptr; })) {
    return give_up("the writer thread makes no progress or writing failed");
  }
  if (!w.kept.TakeSnapshot(&next->definitions)) {
    return give_up("out of memory; recording goes on in " + w.path);
  }
  if (!EndFileInStream(w, lock, w.RelTime(timestamp_ns)) || w.current == nullptr) {
    return give_up("writing failed or the buffers stay full");
  }
  w.current->ends_file = true;
  w.SubmitCurrent();
  // From here on the stream is the next file's: its counters begin with what it begins with.
  w.file_committed_base = w.bytes_committed;
  w.file_prefix_bytes = w.header_packet.size() + next->definitions.bytes;
  for (size_t f = 0; f < writer_internal::kNumPacketFields; ++f) {
    w.packets[f].Set(next->definitions.counts[f]);
  }
  w.next_file = std::move(next);
  w.writer_wake.notify_one();
  return true;
}

void TraceWriter::Impl::SwitchFile(NextFile& next, WriterPass* pass) {
  // The old file ends here: the blocks reserved past its end go back, and it is closed.
  if (reserve_supported) {
    ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(file_pos),
                static_cast<off_t>(kTailReserveBytes));
  }
  const int closed = ::close(fd);
  const int err = errno;
  if (closed != 0 && err != EINTR && !pass->write_failed) {
    write_errors.Max(1);
    PrintLine("warpscope: closing trace " + path + " failed (" + ErrnoText(err) +
              "); it may be incomplete; recording goes on in " + next.path);
  }
  fd = -1;
  if (pass->write_failed) {
    // Writing stopped in the old file and stays stopped: the next one is not begun.
    ::close(next.fd);
    next.fd = -1;
    if (next.created) ::unlink(next.path.c_str());
    return;
  }
  fd = next.fd;
  next.fd = -1;
  path.swap(next.path);
  created_file = next.created;
  regular_file = next.regular_file;
  file_device = next.device;
  file_inode = next.inode;
  file_pos = 0;
  reserve_supported = true;
  bytes_written.Set(0);
  if (!AppendToFile(header_packet.data(), header_packet.size(), pass)) return;
  for (std::span<const uint8_t> part : next.definitions.parts) {
    if (!AppendToFile(part.data(), part.size(), pass)) return;
  }
}

}  // namespace warpscope
