// CallLog: what the program's threads record inside CUDA API callbacks (each kernel launch, and
// the syncs and copies whose stack is wanted), kept per thread without a lock until the
// session's thread drains it into the trace. A launch costs the launching thread one entry
// written into its own chunk and one release store; the trace writer's lock, which a thread
// translating a CUPTI buffer holds for milliseconds, is never taken on that path.
//
// Each thread appends to a chain of fixed-size chunks; the drainer reads every chain up to the
// count each chunk has published and recycles the chunks it finished. Memory is bounded: when
// no chunk is free and the bound is reached, the entry is dropped and counted. Pure: no CUPTI.
#ifndef WARPSCOPE_COLLECTORS_API_CALLS_CALL_LOG_H_
#define WARPSCOPE_COLLECTORS_API_CALLS_CALL_LOG_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace warpscope {

// One CUDA API call as its thread saw it.
struct LoggedCall {
  uint64_t start_ns = 0;        // entering the call (trace clock, absolute)
  uint64_t end_ns = 0;          // leaving it
  uint64_t stack_id = 0;        // CallStack id of the caller's stack; 0 = none taken
  uint32_t correlation_id = 0;  // CUPTI's: the call's kernel, copy, memset or sync carries it
  uint32_t callback_id = 0;     // CUPTI callback id within the domain
  uint32_t result = 0;          // cudaError_t / CUresult
  uint64_t name_id = 0;         // interned function name
  bool runtime = true;          // runtime API, else driver API
  bool write_call = false;      // write an ApiCallEvent (no activity record stands for it)
  bool launch = false;          // a kernel or graph launch
  bool alloc = false;           // allocates, frees or maps memory (StackCallKind::kAlloc)
};

struct CallLogCounts {
  uint64_t logged = 0;   // entries appended
  uint64_t dropped = 0;  // entries lost: no chunk free within the memory bound
  uint64_t threads = 0;  // threads that logged at least one call
};

class CallLog {
 public:
  static constexpr size_t kChunkEntries = 1024;
  // `max_bytes`: the most memory chunks may hold beyond one chunk per logging thread (each
  // thread always keeps the chunk it appends to).
  explicit CallLog(size_t max_bytes);
  ~CallLog();
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;

  // Appends on the calling thread (its chain is made at its first call; `os_tid` names it).
  // Lock-free except when a chunk fills (one lock per kChunkEntries calls). False when
  // dropped.
  bool Append(uint32_t os_tid, const LoggedCall& call);

  // Hands every entry published since the last drain to `consume`, one span per run of a
  // thread's chain, in the order the thread appended them. One drainer at a time (it takes a
  // lock); appends go on meanwhile. Chains of threads that have ended are freed once read.
  void Drain(const std::function<void(uint32_t os_tid, std::span<const LoggedCall>)>& consume);

  // In a child after fork(): nothing is appended or drained any more; memory is left alone.
  void Abandon();

  CallLogCounts counts() const;
  size_t bytes_held() const;  // chunk memory allocated now

 private:
  struct Chunk;
  struct ThreadChain;
  struct ThreadHandle;

  ThreadChain* ChainOfThisThread(uint32_t os_tid);
  ThreadChain* NewChain(uint32_t os_tid);
  Chunk* TakeChunk();
  void Recycle(Chunk* chunk);

  const size_t max_chunks_;
  const uint64_t generation_;  // tells this log's thread handles from an earlier log's
  std::atomic<bool> abandoned_{false};

  mutable std::mutex mu_;  // chains_, free_, chunks_allocated_
  std::vector<ThreadChain*> chains_;
  std::vector<Chunk*> free_;
  size_t chunks_allocated_ = 0;

  std::mutex drain_mu_;
  std::atomic<uint64_t> logged_{0}, dropped_{0}, threads_{0};
  std::atomic<uint64_t> drains_{0};  // drains done: a refused chunk may be asked for again
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_API_CALLS_CALL_LOG_H_
