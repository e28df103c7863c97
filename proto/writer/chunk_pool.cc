// The chunk pool: fixed-size chunks, allocated on first need up to the memory bound, that
// packets are reserved in whole; full chunks go to the writer thread's queue (or the flight
// recorder's ring) and come back to the free list once written (or aged out, or dumped).
// All with the writer's lock held.
#include <chrono>
#include <memory>
#include <mutex>
#include <new>

#include "proto/writer/writer_impl.h"

namespace warpscope {

using writer_internal::Chunk;

Chunk* TraceWriter::Impl::AcquireChunk() {
  Chunk* c = nullptr;
  if (!free_chunks.empty()) {
    c = free_chunks.back();
    free_chunks.pop_back();
  } else if (chunks.size() < max_chunks) {
    // Chunks are allocated on first need, so a short trace does not hold 64 MiB.
    auto chunk = std::unique_ptr<Chunk>(new (std::nothrow) Chunk);
    if (chunk != nullptr) chunk->data.reset(new (std::nothrow) uint8_t[chunk_bytes]);
    if (chunk != nullptr && chunk->data != nullptr) {
      chunks.push_back(std::move(chunk));  // Capacity reserved in Open: does not allocate.
      c = chunks.back().get();
    }
  }
  if (ring_mode) {
    if (c == nullptr) c = EvictOldest();
    if (c != nullptr) c->first_commit_ns = RingNow();
  }
  return c;
}

bool TraceWriter::Impl::KeepDefinition(size_t size, uint32_t field) {
  if (!kept.Keep(current->data.get() + current->used, size, field)) {
    definitions_not_kept.Add(1);
    return false;
  }
  definitions_kept_bytes.Set(kept.memory_bytes());
  if (!ring_mode) return false;
  packets[field].Add(1);
  return true;
}

void TraceWriter::Impl::SubmitCurrent() {
  if (current == nullptr) return;
  if (current->used == 0) return;
  if (ring_mode) {
    HandToRing(current);
    current = nullptr;
    return;
  }
  queue.push_back(current);  // Capacity max_chunks: does not allocate.
  current = nullptr;
  buffer_high_water.Max(bytes_committed - bytes_done);
  writer_wake.notify_one();
}

uint8_t* TraceWriter::Impl::ReserveSpace(size_t size, DropCause* cause) {
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

uint8_t* TraceWriter::Impl::ReserveSlow(size_t size) {
  DropCause cause;
  uint8_t* out = ReserveSpace(size, &cause);
  if (out == nullptr) [[unlikely]] CountDrop(cause);
  return out;
}

uint8_t* TraceWriter::Impl::ReserveWaiting(size_t size, std::unique_lock<std::mutex>& lock) {
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

}  // namespace warpscope
