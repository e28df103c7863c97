// The per-thread call log (see call_log.h).
//
// Who touches what: a chain's tail, and each chunk's entries and `published` count, belong to
// the thread that appends (it publishes with a release store); the drainer reads entries up to
// `published` (acquire), owns each chunk's `read` mark and the chain's head, and recycles a
// chunk only once it is full and its successor exists: the appender has moved on for good.
#include "collectors/api_calls/call_log.h"

#include <algorithm>

namespace warpscope {

struct CallLog::Chunk {
  std::atomic<uint32_t> published{0};
  uint32_t read = 0;
  std::atomic<Chunk*> next{nullptr};
  LoggedCall entries[kChunkEntries];
};

struct CallLog::ThreadChain {
  uint32_t os_tid = 0;
  Chunk* head = nullptr;  // the drainer's
  Chunk* tail = nullptr;  // the appending thread's
  // The drain count when a chunk was last refused (the bound was reached): the appending
  // thread does not ask again, and take the lock, until a drain freed chunks.
  uint64_t refused_at_drain = ~0ull;
  // Set when the thread ends (its handle's destructor); shared so that a handle outliving the
  // log writes into memory that still exists.
  std::shared_ptr<std::atomic<bool>> ended;
};

namespace {
std::atomic<uint64_t> g_generations{0};

// Trivially destructible, so still usable once the thread's handle below was destroyed: a call
// made after that (an atexit handler of the main thread runs after its thread-locals ended; a
// thread_local's destructor of the program may launch) goes to a chain of its own that is
// never freed, instead of through the destroyed handle.
thread_local bool t_handle_gone = false;
thread_local uint64_t t_late_generation = 0;
thread_local void* t_late_chain = nullptr;
}  // namespace

// The calling thread's chain in the log of `generation`.
struct CallLog::ThreadHandle {
  uint64_t generation = 0;
  ThreadChain* chain = nullptr;
  std::shared_ptr<std::atomic<bool>> ended;
  ~ThreadHandle() {
    if (ended) ended->store(true, std::memory_order_release);
    ended.reset();
    chain = nullptr;
    generation = 0;
    t_handle_gone = true;
  }
};

CallLog::CallLog(size_t max_bytes)
    : max_chunks_(std::max<size_t>(1, max_bytes / sizeof(Chunk))),
      generation_(g_generations.fetch_add(1) + 1) {}

CallLog::~CallLog() {
  std::lock_guard<std::mutex> lock(mu_);
  for (ThreadChain* chain : chains_) {
    for (Chunk* c = chain->head; c != nullptr;) {
      Chunk* next = c->next.load();
      delete c;
      c = next;
    }
    delete chain;
  }
  for (Chunk* c : free_) delete c;
}

CallLog::ThreadChain* CallLog::NewChain(uint32_t os_tid) {
  auto chain = std::make_unique<ThreadChain>();
  chain->os_tid = os_tid;
  chain->ended = std::make_shared<std::atomic<bool>>(false);
  std::lock_guard<std::mutex> lock(mu_);
  Chunk* first = nullptr;
  if (!free_.empty()) {
    first = free_.back();
    free_.pop_back();
  } else {
    first = new Chunk();  // each chain's first chunk is outside the bound: every thread may log
    ++chunks_allocated_;
  }
  chain->head = chain->tail = first;
  chains_.push_back(chain.get());
  threads_.fetch_add(1, std::memory_order_relaxed);
  return chain.release();
}

CallLog::ThreadChain* CallLog::ChainOfThisThread(uint32_t os_tid) {
  if (t_handle_gone) {
    if (t_late_generation != generation_ || t_late_chain == nullptr) {
      t_late_chain = NewChain(os_tid);  // never marked ended: never freed while the log lives
      t_late_generation = generation_;
    }
    return static_cast<ThreadChain*>(t_late_chain);
  }
  thread_local ThreadHandle handle;
  if (handle.generation == generation_ && handle.chain != nullptr) return handle.chain;
  ThreadChain* chain = NewChain(os_tid);
  if (handle.ended) handle.ended->store(true, std::memory_order_release);  // an older log's
  handle.generation = generation_;
  handle.ended = chain->ended;
  handle.chain = chain;
  return chain;
}

CallLog::Chunk* CallLog::TakeChunk() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!free_.empty()) {
    Chunk* c = free_.back();
    free_.pop_back();
    return c;
  }
  // Each chain's last chunk stays with it until a successor exists: those are not counted.
  if (chunks_allocated_ >= max_chunks_ + chains_.size()) return nullptr;
  ++chunks_allocated_;
  return new Chunk();
}

void CallLog::Recycle(Chunk* chunk) {
  chunk->published.store(0, std::memory_order_relaxed);
  chunk->read = 0;
  chunk->next.store(nullptr, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(chunk);
}

bool CallLog::Append(uint32_t os_tid, const LoggedCall& call) {
  if (abandoned_.load(std::memory_order_relaxed)) return false;
  ThreadChain* chain = ChainOfThisThread(os_tid);
  Chunk* tail = chain->tail;
  uint32_t n = tail->published.load(std::memory_order_relaxed);
  if (n == kChunkEntries) {
    const uint64_t drains = drains_.load(std::memory_order_acquire);
    Chunk* fresh = chain->refused_at_drain == drains ? nullptr : TakeChunk();
    if (fresh == nullptr) {
      chain->refused_at_drain = drains;
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    tail->next.store(fresh, std::memory_order_release);
    chain->tail = tail = fresh;
    n = 0;
  }
  tail->entries[n] = call;
  tail->published.store(n + 1, std::memory_order_release);
  logged_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void CallLog::Drain(
    const std::function<void(uint32_t os_tid, std::span<const LoggedCall>)>& consume) {
  if (abandoned_.load()) return;
  std::lock_guard<std::mutex> drain_lock(drain_mu_);
  std::vector<ThreadChain*> chains;
  {
    std::lock_guard<std::mutex> lock(mu_);
    chains = chains_;
  }
  std::vector<ThreadChain*> finished;
  for (ThreadChain* chain : chains) {
    // Read before draining: everything an ended thread appended is then visible.
    const bool ended = chain->ended->load(std::memory_order_acquire);
    Chunk* c = chain->head;
    for (;;) {
      const uint32_t n = c->published.load(std::memory_order_acquire);
      if (n > c->read) {
        consume(chain->os_tid, std::span<const LoggedCall>(c->entries + c->read, n - c->read));
        c->read = n;
      }
      Chunk* next = n == kChunkEntries ? c->next.load(std::memory_order_acquire) : nullptr;
      if (next == nullptr) break;
      chain->head = next;
      Recycle(c);
      c = next;
    }
    if (ended) finished.push_back(chain);
  }
  drains_.fetch_add(1, std::memory_order_release);  // chunks may be free again
  if (finished.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (ThreadChain* chain : finished) {
    chains_.erase(std::find(chains_.begin(), chains_.end(), chain));
    Chunk* c = chain->head;  // the last one: everything before it was recycled above
    c->published.store(0, std::memory_order_relaxed);
    c->read = 0;
    c->next.store(nullptr, std::memory_order_relaxed);
    free_.push_back(c);
    delete chain;
  }
}

void CallLog::Abandon() { abandoned_.store(true); }

CallLogCounts CallLog::counts() const {
  return {logged_.load(), dropped_.load(), threads_.load()};
}

size_t CallLog::bytes_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chunks_allocated_ * sizeof(Chunk);
}

}  // namespace warpscope
