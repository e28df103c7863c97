// Stack interning (see stack_table.h).
#include "collectors/stacks/stack_table.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <time.h>
#include <unwind.h>

#include <algorithm>
#include <cstring>

namespace warpscope {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::atomic<uint64_t> g_generations{0};

// One small direct-mapped cache a thread: raw stack hash → stack id. An entry of another
// table (another generation) is a miss.
struct ThreadStackCache {
  static constexpr size_t kSlots = 1024;
  struct Slot {
    uint64_t key = 0;
    uint64_t generation = 0;
    uint64_t stack_id = 0;
  };
  Slot slots[kSlots];
  // What this thread's native walks learned of each return address: the size of the frame it
  // returns into (its CFA minus its callee's), -1 when it was seen to vary; the walk of known
  // sizes (KnownStackWalk) reads no further than the top of the thread's stack. Set
  // associative, kFrameWays a return address: with one slot each, two frames of the stacks a
  // thread shares (the test runner's, main's) whose addresses hash alike evicted each other at
  // every walk, and the walk never reached a stack it knew.
  static constexpr size_t kFrameSlots = 1024;
  static constexpr size_t kFrameWays = 4;
  struct FrameSize {
    uintptr_t pc = 0;
    intptr_t size = 0;
  };
  FrameSize frame_sizes[kFrameSlots];
  uint32_t frame_evictions = 0;  // picks the way a new return address takes in a full set
  bool bounds_read = false;
  uintptr_t stack_low = 0, stack_top = 0;  // the thread's stack; 0, 0: not known
};
thread_local ThreadStackCache* t_cache = nullptr;

ThreadStackCache& Cache() {
  // Leaked at thread exit on purpose: a destructor would run after the library may be gone.
  if (t_cache == nullptr) t_cache = new ThreadStackCache();
  return *t_cache;
}

constexpr uint64_t kPrefixSeed = 0x2545f4914f6cdd1dull;

// A native stack's key in the thread's cache: the frames walked, their return addresses mixed
// in and the stack pointer of the last one.
uint64_t PrefixKey(uint64_t mixed, int frames, uintptr_t cfa) {
  const uint64_t key = Mix(Mix(mixed, cfa), 0x5bd1e995u + static_cast<uint64_t>(frames));
  return key != 0 ? key : 1;  // 0 is an empty cache slot
}

// The first slot of the set a return address may take.
size_t FrameSet(uintptr_t pc) {
  constexpr size_t kSets = ThreadStackCache::kFrameSlots / ThreadStackCache::kFrameWays;
  return static_cast<size_t>((pc * 0x9e3779b97f4a7c15ull) >> 54) % kSets *
         ThreadStackCache::kFrameWays;
}

// The slot that holds `pc`'s frame size, or nullptr.
const ThreadStackCache::FrameSize* FindFrameSize(const ThreadStackCache& cache, uintptr_t pc) {
  const size_t set = FrameSet(pc);
  for (size_t way = 0; way < ThreadStackCache::kFrameWays; ++way) {
    if (cache.frame_sizes[set + way].pc == pc) return &cache.frame_sizes[set + way];
  }
  return nullptr;
}

// The slot for `pc`'s frame size: its own, else an empty one of its set, else one taken in
// turn from the set.
ThreadStackCache::FrameSize& FrameSizeSlot(ThreadStackCache& cache, uintptr_t pc) {
  const size_t set = FrameSet(pc);
  for (size_t way = 0; way < ThreadStackCache::kFrameWays; ++way) {
    if (cache.frame_sizes[set + way].pc == pc) return cache.frame_sizes[set + way];
  }
  for (size_t way = 0; way < ThreadStackCache::kFrameWays; ++way) {
    if (cache.frame_sizes[set + way].pc == 0) return cache.frame_sizes[set + way];
  }
  return cache.frame_sizes[set + cache.frame_evictions++ % ThreadStackCache::kFrameWays];
}

// Learns the frame sizes a DWARF walk found. `sps[i]`: the stack pointer of frame i at its
// call (the CFA of the frame it called; sps[0] is the walking function's CFA), so the return
// address pcs[i] lies just below it and the frame takes sps[i + 1] - sps[i]. A return address
// found elsewhere (a signal frame), or a size seen to vary, is never walked by size.
void LearnFrameSizes(const void* const* pcs, const uintptr_t* sps, int n) {
  ThreadStackCache& cache = Cache();
  for (int i = 0; i + 1 < n; ++i) {
    const auto pc = reinterpret_cast<uintptr_t>(pcs[i]);
    const intptr_t size = static_cast<intptr_t>(sps[i + 1] - sps[i]);
    const bool walkable = sps[i + 1] > sps[i] && sps[i] > cache.stack_low &&
                          sps[i + 1] <= cache.stack_top &&
                          *reinterpret_cast<const uintptr_t*>(sps[i] - sizeof(pc)) == pc;
    ThreadStackCache::FrameSize& slot = FrameSizeSlot(cache, pc);
    if (slot.pc != pc) {
      slot = {pc, walkable ? size : -1};
    } else if (slot.size != size || !walkable) {
      slot.size = -1;
    }
  }
}

// Walks up from `self_cfa` (the walking function's CFA: the stack pointer of its caller) by
// the frame sizes learned, each return address just below its frame's stack pointer, and
// returns the stack id the thread's cache holds for the frames so far; 0 at a return address
// of unknown size, at the top of the stack, or with no stack known. A key holds every return
// address and the stack pointer of the last frame, so a hit is a stack a DWARF walk found: a
// wrong size can only miss.
uint64_t KnownStackWalk(uintptr_t self_cfa, int max, uint64_t generation) {
  ThreadStackCache& cache = Cache();  // once: in a shared library each TLS access is a call
  if (!cache.bounds_read) {
    cache.bounds_read = true;
    pthread_attr_t attr;
    void* low = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      if (pthread_attr_getstack(&attr, &low, &size) == 0) {
        cache.stack_low = reinterpret_cast<uintptr_t>(low);
        cache.stack_top = cache.stack_low + size;
      }
      pthread_attr_destroy(&attr);
    }
  }
  // Only on the thread's own stack (not a fiber's or a signal stack): every read lies between
  // this frame and the top.
  if (self_cfa <= cache.stack_low || self_cfa > cache.stack_top) return 0;
  uint64_t mixed = kPrefixSeed;
  uintptr_t sp = self_cfa;
  for (int n = 1; n <= max && sp <= cache.stack_top; ++n) {
    const uintptr_t pc = *reinterpret_cast<const uintptr_t*>(sp - sizeof(pc));
    mixed = Mix(mixed, pc);
    const uint64_t key = PrefixKey(mixed, n, sp);
    const ThreadStackCache::Slot& known = cache.slots[key % ThreadStackCache::kSlots];
    if (known.key == key && known.generation == generation) return known.stack_id;
    const ThreadStackCache::FrameSize* slot = FindFrameSize(cache, pc);
    if (slot == nullptr || slot->size <= 0) return 0;
    sp += static_cast<uintptr_t>(slot->size);
  }
  return 0;
}

// Frames of the profiler itself, above the program's call: left out of native stacks.
bool IsProfilerModule(const char* path) {
  if (path == nullptr) return false;
  const char* base = std::strrchr(path, '/');
  base = base != nullptr ? base + 1 : path;
  return std::strncmp(base, "libwarpscope", 12) == 0 || std::strncmp(base, "libcupti", 8) == 0 ||
         std::strncmp(base, "libcuda.so", 10) == 0;
}

// One native walk (_Unwind_Backtrace): return addresses and each frame's stack pointer at its
// call (_Unwind_GetCFA: the CFA of the frame it called), stopped when the frames so far are a
// stack the thread's cache knows.
struct NativeWalk {
  void** pcs = nullptr;
  uintptr_t* sps = nullptr;
  int max = 0;
  int n = 0;
  int skip = 1;  // the walking function's own frame, as backtrace(3) leaves it out
  uint64_t mixed = kPrefixSeed;
  uint64_t (*cached)(const void* table, uint64_t key) = nullptr;
  const void* table = nullptr;
  uint64_t hit = 0;  // the cached stack id of a known stack
};

_Unwind_Reason_Code WalkFrame(_Unwind_Context* context, void* arg) {
  auto* w = static_cast<NativeWalk*>(arg);
  if (w->skip > 0) {
    --w->skip;
    return _URC_NO_REASON;
  }
  if (w->n >= w->max) return _URC_END_OF_STACK;
  const uintptr_t pc = _Unwind_GetIP(context);
  if (pc == 0) return _URC_END_OF_STACK;
  w->pcs[w->n] = reinterpret_cast<void*>(pc);
  w->sps[w->n] = _Unwind_GetCFA(context);
  w->mixed = Mix(w->mixed, pc);
  ++w->n;
  w->hit = w->cached(w->table, PrefixKey(w->mixed, w->n, w->sps[w->n - 1]));
  return w->hit != 0 ? _URC_END_OF_STACK : _URC_NO_REASON;
}

}  // namespace

size_t StackTable::PythonFrameKeyHash::operator()(const PythonFrameKey& k) const {
  uint64_t h = Mix(0, reinterpret_cast<uintptr_t>(k.code));
  h = Mix(h, static_cast<uint32_t>(k.instruction));
  h = Mix(h, reinterpret_cast<uintptr_t>(k.filename));
  return static_cast<size_t>(Mix(h, static_cast<uint32_t>(k.first_line)));
}

StackTable::StackTable(StackSink* sink, int max_depth, bool timed)
    : sink_(sink),
      max_depth_(std::clamp(max_depth, 1, kMaxDepth)),
      outer_frames_(std::min(kOuterFrames, max_depth_ / 2)),
      timed_(timed),
      generation_(g_generations.fetch_add(1) + 1) {
  // backtrace(3) loads libgcc_s on its first call: here, not inside a CUDA call's callback.
  void* warm_up[2];
  backtrace(warm_up, 2);
}

StackTable::~StackTable() = default;

uint64_t StackTable::CachedStack(uint64_t key) const {
  const ThreadStackCache::Slot& s = Cache().slots[key % ThreadStackCache::kSlots];
  return s.key == key && s.generation == generation_ ? s.stack_id : 0;
}

void StackTable::RememberStack(uint64_t key, uint64_t stack_id) const {
  ThreadStackCache::Slot& s = Cache().slots[key % ThreadStackCache::kSlots];
  s = {key, generation_, stack_id};
}

template <typename Intern>
uint64_t StackTable::StackOf(uint64_t key, const Intern& intern) {
  if (key == 0) key = 1;  // 0 is an empty cache slot
  if (uint64_t id = CachedStack(key)) return id;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = raw_stacks_.find(key);
    id = it != raw_stacks_.end() ? it->second : intern();
    if (id != 0) raw_stacks_.emplace(key, id);
  }
  if (id != 0) RememberStack(key, id);
  return id;
}

StackCapture StackTable::Capture(bool native_fallback) {
  // The first kTimedEvery captures are timed (they include the slow ones: detection, code
  // objects described), then one in kTimedEvery: two clock reads on every launch would cost a
  // fifth of what the capture itself costs.
  const uint64_t nth = captures_.fetch_add(1, std::memory_order_relaxed);
  const bool early = nth < kTimedEvery;
  const bool timed = timed_ && (early || nth % kTimedEvery == 0);
  const uint64_t start = timed ? NowNs() : 0;
  StackCapture c;
  const PythonSupport python = python_.Detect();
  if (python == PythonSupport::kNoPython) {
    c = CaptureNative();
  } else if (python == PythonSupport::kReady) {
    c = CapturePython();
    if (c.source == StackSource::kNone && native_fallback) c = CaptureNative();
  } else {
    c.source = StackSource::kUnreadable;
  }
  if (c.stack_id == 0) no_stack_.fetch_add(1, std::memory_order_relaxed);
  if (timed && early) {
    early_ns_.fetch_add(NowNs() - start, std::memory_order_relaxed);
  } else if (timed) {
    capture_ns_.fetch_add(NowNs() - start, std::memory_order_relaxed);
    timed_captures_.fetch_add(1, std::memory_order_relaxed);
  }
  return c;
}

StackCapture StackTable::CapturePython() {
  PythonRawFrame frames[kMaxDepth];
  PythonCut cut;
  const int n = python_.Read(frames, max_depth_, outer_frames_, &cut);
  if (n == 0) {
    return {0, python_.support() == PythonSupport::kReady ? StackSource::kNone
                                                         : StackSource::kUnreadable};
  }
  // Two independent multiply chains, one over where each frame is (code object and
  // instruction) and one over which code object it is (file and first line): half the
  // dependent multiplies of mixing each field in turn.
  uint64_t where = 0x243f6a8885a308d3ull ^ static_cast<uint64_t>(n) ^
                   (static_cast<uint64_t>(cut.left_out) << 8);
  uint64_t which = cut.truncated ? 0x13198a2e03707344ull : 0xa4093822299f31d0ull;
  for (int i = 0; i < n; ++i) {
    const PythonRawFrame& f = frames[i];
    where = (where ^ (reinterpret_cast<uintptr_t>(f.code) +
                      (static_cast<uint64_t>(static_cast<uint32_t>(f.instruction)) << 48))) *
            0x9e3779b97f4a7c15ull;
    which = (which ^ (reinterpret_cast<uintptr_t>(f.filename) +
                      (static_cast<uint64_t>(static_cast<uint32_t>(f.first_line)) << 40))) *
            0xff51afd7ed558ccdull;
    where ^= where >> 29;
    which ^= which >> 31;
  }
  const uint64_t key = Mix(where, which);
  const uint64_t id =
      StackOf(key, [&] { return InternPythonLocked(frames, n, cut); });
  return {id, id != 0 ? StackSource::kPython : StackSource::kUnreadable};
}

uint64_t StackTable::InternPythonLocked(const PythonRawFrame* frames, int n,
                                        const PythonCut& cut) {
  std::vector<uint64_t> ids;
  ids.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const PythonRawFrame& f = frames[i];
    const PythonFrameKey key{f.code, f.instruction, f.filename, f.first_line};
    auto found = python_frames_.find(key);
    if (found != python_frames_.end()) {
      ids.push_back(found->second);
      continue;
    }
    auto code = code_.find(f.code);
    if (code == code_.end() || code->second.filename != f.filename ||
        code->second.first_line != f.first_line) {
      PythonCodeInfo info;
      if (!python_.Describe(f.code, &info)) return 0;
      const CodeEntry entry{f.filename, info.first_line, sink_->InternString(info.file),
                            sink_->InternString(info.function)};
      code = code_.insert_or_assign(f.code, entry).first;
      ++code_objects_;
    }
    StackFrameRecord r;
    r.id = next_frame_id_++;
    r.kind = FrameKind::kPython;
    r.file_id = code->second.file_id;
    r.function_id = code->second.function_id;
    r.line = static_cast<uint32_t>(std::max(0, python_.LineOf(f.code, f.instruction)));
    r.first_line = static_cast<uint32_t>(std::max(0, code->second.first_line));
    sink_->Write(r);
    ++frames_written_;
    python_frames_.emplace(key, r.id);
    ids.push_back(r.id);
  }
  return InternStackLocked(std::move(ids), cut);
}

StackCapture StackTable::CaptureNative() {
  // One more than kept, to know that the stack was cut; a few more for the profiler's own.
  constexpr int kOwnFrames = 8;
  constexpr int kMaxWalk = kMaxDepth + kOwnFrames + 1;
  const auto self_cfa = reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa());
  if (const uint64_t id = KnownStackWalk(self_cfa, max_depth_ + kOwnFrames + 1, generation_)) {
    native_known_.fetch_add(1, std::memory_order_relaxed);
    return {id, StackSource::kNative};
  }
  void* pcs[kMaxWalk];
  uintptr_t sps[kMaxWalk];
  NativeWalk walk;
  walk.pcs = pcs;
  walk.sps = sps;
  walk.max = max_depth_ + kOwnFrames + 1;
  walk.table = this;
  walk.cached = [](const void* table, uint64_t key) {
    return static_cast<const StackTable*>(table)->CachedStack(key);
  };
  _Unwind_Backtrace(WalkFrame, &walk);
  LearnFrameSizes(pcs, sps, walk.n);
  if (walk.hit != 0) return {walk.hit, StackSource::kNative};
  const int n = walk.n;
  if (n <= 0) return {0, StackSource::kNone};
  uint64_t key = Mix(2, static_cast<uint64_t>(n));
  for (int i = 0; i < n; ++i) key = Mix(key, reinterpret_cast<uintptr_t>(pcs[i]));
  const uint64_t id = StackOf(key, [&] { return InternNativeLocked(pcs, n); });
  if (id == 0) return {0, StackSource::kNone};
  // The next walk from here, by frame sizes, finds this stack by all its return addresses
  // and its outermost stack pointer.
  RememberStack(PrefixKey(walk.mixed, n, sps[n - 1]), id);
  return {id, StackSource::kNative};
}

int StackTable::OwnFrames(void* const* pcs, int n) {
  int first = 0;
  while (first < n) {
    Dl_info info;
    if (dladdr(pcs[first], &info) == 0 || !IsProfilerModule(info.dli_fname)) break;
    ++first;
  }
  return first == n ? 0 : first;
}

uint64_t StackTable::InternNativeLocked(void* const* pcs, int n) {
  // Leave out the profiler's own frames (this function, the CUPTI callback, the driver).
  const int first = OwnFrames(pcs, n);
  const int kept = std::min(n - first, max_depth_);
  std::vector<uint64_t> ids;
  ids.reserve(static_cast<size_t>(kept));
  for (int i = first; i < first + kept; ++i) ids.push_back(NativeFrameLocked(pcs[i]));
  return InternStackLocked(std::move(ids), PythonCut{n - first > kept, 0, 0});
}

uint64_t StackTable::NativeFrameLocked(const void* pc) {
  auto found = native_frames_.find(pc);
  if (found != native_frames_.end()) return found->second;
  StackFrameRecord r;
  r.id = next_frame_id_++;
  r.kind = FrameKind::kNative;
  Dl_info info;
  if (dladdr(pc, &info) != 0 && info.dli_fname != nullptr) {
    const auto address = reinterpret_cast<uintptr_t>(pc);
    r.file_id = sink_->InternString(info.dli_fname);
    r.module_offset = address - reinterpret_cast<uintptr_t>(info.dli_fbase);
    // The module's own symbol table, read once: dladdr knows only exported symbols and names
    // the nearest one, which for a static function is another function's name. A return
    // address points after the call; one byte back is inside the caller.
    std::unique_ptr<ElfSymbols>& symbols = modules_[info.dli_fname];
    if (symbols == nullptr) {
      symbols = std::make_unique<ElfSymbols>();
      // The main program may be named as it was started (relative, or empty).
      if (!symbols->Load(info.dli_fname) && info.dli_fname[0] != '/') {
        symbols->Load("/proc/self/exe");
      }
    }
    r.function_id = sink_->InternString(
        symbols->Find(symbols->absolute() ? address - 1 : r.module_offset - 1));
  } else {
    r.module_offset = reinterpret_cast<uintptr_t>(pc);
  }
  sink_->Write(r);
  ++frames_written_;
  native_frames_.emplace(pc, r.id);
  return r.id;
}

uint64_t StackTable::InternStackLocked(std::vector<uint64_t> frame_ids, const PythonCut& cut) {
  auto key = std::make_tuple(std::move(frame_ids), cut.truncated, cut.outermost, cut.left_out);
  auto found = stacks_.find(key);
  if (found != stacks_.end()) return found->second;
  CallStackRecord r;
  r.id = next_stack_id_++;
  r.frame_ids = std::get<0>(key);
  r.truncated = cut.truncated;
  r.outermost = static_cast<uint32_t>(cut.outermost);
  r.left_out = static_cast<uint32_t>(cut.left_out);
  sink_->Write(r);
  ++stacks_written_;
  stacks_.emplace(std::move(key), r.id);
  return r.id;
}

StackTableCounts StackTable::counts() const {
  StackTableCounts c;
  c.captures = captures_.load(std::memory_order_relaxed);
  c.no_stack = no_stack_.load(std::memory_order_relaxed);
  c.native_known = native_known_.load(std::memory_order_relaxed);
  // The first captures as timed; the one in kTimedEvery after them stands for the rest.
  const uint64_t timed = timed_captures_.load(std::memory_order_relaxed);
  const uint64_t sampled_ns = capture_ns_.load(std::memory_order_relaxed);
  const uint64_t rest = c.captures > kTimedEvery ? c.captures - kTimedEvery : 0;
  c.capture_ns = early_ns_.load(std::memory_order_relaxed) +
                 (timed == 0 ? 0
                             : static_cast<uint64_t>(static_cast<double>(sampled_ns) *
                                                     static_cast<double>(rest) /
                                                     static_cast<double>(timed)));
  std::lock_guard<std::mutex> lock(mu_);
  c.stacks = stacks_written_;
  c.frames = frames_written_;
  c.code_objects = code_objects_;
  return c;
}

}  // namespace warpscope
