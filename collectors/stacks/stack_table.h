// StackTable: turns the calling thread's stack into an interned CallStack id. Each distinct
// stack is written once (its StackFrame and CallStack records through a StackSink), each code
// object is described once, and each (code object, instruction) is turned into a line once.
// A thread-local cache of raw stacks makes a repeated call site cost one walk and one lookup,
// with no lock. Python stacks come from PythonFrameReader (a stack deeper than the limit keeps
// its innermost frames and its kOuterFrames outermost, the cut marked between them); in a
// process without Python (or on request, for a Python process's thread with no Python frame),
// native return addresses from _Unwind_Backtrace: module and offset from dladdr(3), the
// function from the module's ELF symbol table (read once per module, at its first frame).
// A native stack the thread saw before is found by walking the frame sizes its earlier
// unwinds learned (its return addresses and its outermost stack pointer are the cache key),
// with no DWARF unwind.
// Pure: no CUPTI.
#ifndef WARPSCOPE_COLLECTORS_STACKS_STACK_TABLE_H_
#define WARPSCOPE_COLLECTORS_STACKS_STACK_TABLE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "collectors/stacks/elf_symbols.h"
#include "collectors/stacks/python_frames.h"
#include "proto/writer/trace_records.h"

namespace warpscope {

// Where interned stacks go: the trace writer in the library, a vector in tests.
class StackSink {
 public:
  virtual ~StackSink() = default;
  virtual uint64_t InternString(std::string_view value) = 0;
  virtual void Write(const StackFrameRecord& frame) = 0;
  virtual void Write(const CallStackRecord& stack) = 0;
};

// What a capture found.
enum class StackSource {
  kPython,      // the thread's Python frames
  kNative,      // native return addresses (a process without Python)
  kNone,        // a Python process's thread with no Python frame (autograd's, NCCL's)
  kUnreadable,  // Python present but not readable (version, layout): nothing recorded
};

struct StackCapture {
  uint64_t stack_id = 0;  // 0 with kNone and kUnreadable
  StackSource source = StackSource::kNone;
};

// Counts since the table was made.
struct StackTableCounts {
  uint64_t captures = 0;      // Capture() calls
  uint64_t no_stack = 0;      // captures that found no stack
  uint64_t stacks = 0;        // distinct CallStack records written
  uint64_t frames = 0;        // distinct StackFrame records written
  uint64_t code_objects = 0;  // code objects described (each once)
  uint64_t native_known = 0;  // native stacks found by walking learned frame sizes
  uint64_t capture_ns = 0;    // time spent in Capture(), ns: the first kTimedEvery captures
                              // timed, then one in kTimedEvery standing for the rest
};

class StackTable {
 public:
  // `max_depth`: frames kept (1..kMaxDepth): a deeper Python stack keeps its innermost
  // max_depth - kOuterFrames and its kOuterFrames outermost (max_depth / 2 of each below 16),
  // a deeper native stack its innermost; `timed`: measure each capture.
  StackTable(StackSink* sink, int max_depth, bool timed);
  ~StackTable();
  StackTable(const StackTable&) = delete;
  StackTable& operator=(const StackTable&) = delete;

  static constexpr int kMaxDepth = 128;
  static constexpr int kOuterFrames = 8;
  static constexpr uint64_t kTimedEvery = 64;

  // The calling thread's stack. Thread-safe. `native_fallback`: in a Python process, a thread
  // with no Python frame gets its native stack (else none).
  StackCapture Capture(bool native_fallback = false);
  StackTableCounts counts() const;
  PythonFrameReader& python() { return python_; }

 private:
  struct PythonFrameKey {
    const void* code;
    int32_t instruction;
    const void* filename;
    int32_t first_line;
    bool operator==(const PythonFrameKey&) const = default;
  };
  struct PythonFrameKeyHash {
    size_t operator()(const PythonFrameKey& k) const;
  };
  struct CodeEntry {
    const void* filename;
    int32_t first_line;
    uint64_t file_id;
    uint64_t function_id;
  };

  StackCapture CapturePython();
  // Not inlined: its CFA starts the walk of known frame sizes.
  __attribute__((noinline)) StackCapture CaptureNative();
  uint64_t InternPythonLocked(const PythonRawFrame* frames, int n, const PythonCut& cut);
  uint64_t InternNativeLocked(void* const* pcs, int n);
  // The profiler's own frames at the top of a native stack (0 when it is all the profiler's).
  static int OwnFrames(void* const* pcs, int n);
  // The stack id of a raw stack's hash: from this thread's cache, the table, or `intern()`
  // (called with the lock held; 0 when the stack could not be read).
  template <typename Intern>
  uint64_t StackOf(uint64_t key, const Intern& intern);
  uint64_t InternStackLocked(std::vector<uint64_t> frame_ids, const PythonCut& cut);
  uint64_t NativeFrameLocked(const void* pc);
  // The thread-local cache, keyed by a hash of the raw stack and this table's generation.
  uint64_t CachedStack(uint64_t key) const;
  void RememberStack(uint64_t key, uint64_t stack_id) const;

  StackSink* sink_;
  const int max_depth_;
  const int outer_frames_;  // of a Python stack deeper than max_depth_
  const bool timed_;
  const uint64_t generation_;
  PythonFrameReader python_;

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, uint64_t> raw_stacks_;  // raw hash → stack id
  std::unordered_map<PythonFrameKey, uint64_t, PythonFrameKeyHash> python_frames_;
  std::unordered_map<const void*, CodeEntry> code_;
  std::unordered_map<const void*, uint64_t> native_frames_;  // return address → frame id
  std::unordered_map<std::string, std::unique_ptr<ElfSymbols>> modules_;  // by path
  // Frames, truncated, outermost, left out.
  std::map<std::tuple<std::vector<uint64_t>, bool, int, int>, uint64_t> stacks_;
  uint64_t next_frame_id_ = 1;
  uint64_t next_stack_id_ = 1;

  std::atomic<uint64_t> captures_{0}, no_stack_{0}, capture_ns_{0}, timed_captures_{0};
  std::atomic<uint64_t> native_known_{0};
  std::atomic<uint64_t> early_ns_{0};  // the first kTimedEvery captures
  uint64_t frames_written_ = 0, stacks_written_ = 0, code_objects_ = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_STACKS_STACK_TABLE_H_
