// PythonFrameReader: reads the calling thread's CPython frames without the GIL, the way
// out-of-process samplers read another process, from layouts CPython itself publishes. CUPTI
// callbacks run while PyTorch has released the GIL, and taking it there can deadlock, so the
// reader only loads memory: it never calls into the interpreter beyond three lock-free getters.
//
// Where the layout comes from:
//  - the thread state: PyGILState_GetThisThreadState() (a thread-specific slot, valid with the
//    GIL released);
//  - the frame chain: the thread state's frame pointer and the interpreter frame's links, at
//    the offsets of CPython 3.11 and 3.12; other versions are refused (and say so);
//  - code objects: PyCode_Type's own member table (co_filename, co_qualname, co_firstlineno,
//    co_linetable) and its tp_basicsize (where the bytecode starts).
// Before the first read is trusted, the reader walks one real chain with reads that cannot
// fault (process_vm_readv on itself) and checks that every code pointer is a code object; a
// mismatch turns it off for good (kLayoutMismatch) instead of risking a crash.
// Pure: no CUPTI; unit-tested against the CPython that runs the tests.
#ifndef WARPSCOPE_COLLECTORS_STACKS_PYTHON_FRAMES_H_
#define WARPSCOPE_COLLECTORS_STACKS_PYTHON_FRAMES_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace warpscope {

// A frame as the interpreter holds it: its code object, the bytecode offset (in code units)
// of the instruction being run, and two of the code object's fields that tell a reused
// address apart.
struct PythonRawFrame {
  const void* code = nullptr;
  int32_t instruction = 0;
  const void* filename = nullptr;  // co_filename (a str object)
  int32_t first_line = 0;          // co_firstlineno
};

// What a read left out of a stack deeper than its limit.
struct PythonCut {
  bool truncated = false;  // frames were left out
  int outermost = 0;       // the last `outermost` frames read are the stack's outermost, the
                           // frames left out lie before them; 0: the outer frames were left out
  int left_out = 0;        // with `outermost`: how many
};

// What a code object says about itself.
struct PythonCodeInfo {
  std::string file;      // co_filename
  std::string function;  // co_qualname
  int32_t first_line = 0;
};

enum class PythonSupport {
  kNotChecked,         // Detect() has not run
  kNoPython,           // no CPython in the process (not a Python program, or loaded locally)
  kUnsupportedVersion, // a CPython whose frame layout the reader does not know
  kLayoutMismatch,     // the check of a real chain failed: the reader stays off
  kReady,              // versions known, the chain check passes or is pending
};

std::string_view PythonSupportName(PythonSupport support);

class PythonFrameReader {
 public:
  // Looks for CPython in the process (global symbols). Idempotent and thread-safe; cheap once
  // done. Python may start after the library does, so kNoPython is looked for again at most
  // once a second.
  PythonSupport Detect();
  PythonSupport support() const { return support_.load(std::memory_order_acquire); }
  // PY_VERSION_HEX of the interpreter found; 0 when none.
  uint32_t version_hex() const { return version_hex_; }

  // The calling thread's frames, innermost first: at most `max` into `out`. A stack deeper
  // than `max` keeps its innermost `max - outer` frames followed by its outermost `outer`
  // (0 <= outer <= kMaxOuter, outer < max; the program's entry, where its own lines are when
  // a library's frames fill the rest), and *cut says what was left out between. 0 when the
  // thread runs no Python (no thread state, or no frame), when the interpreter is finalizing,
  // or when support() is not kReady.
  static constexpr int kMaxOuter = 16;
  int Read(PythonRawFrame* out, int max, int outer, PythonCut* cut);

  // The file, function and first line of a code object read by Read() on this thread while
  // its frame is still on the stack. False when a string cannot be read.
  bool Describe(const void* code, PythonCodeInfo* info) const;
  // The 1-based line of `instruction` in `code` (from co_linetable); 0 when it has none.
  int32_t LineOf(const void* code, int32_t instruction) const;

 private:
  struct Layout {
    // Thread state → frame chain.
    size_t ts_frame_holder = 0;     // offset of the pointer to the holder of the current frame
    bool ts_frame_indirect = false; // true: that pointer is a _PyCFrame*, the frame inside it
    size_t holder_current = 0;      // offset of current_frame in the _PyCFrame
    size_t frame_code = 0;          // _PyInterpreterFrame.f_code
    size_t frame_previous = 0;      // _PyInterpreterFrame.previous
    size_t frame_instr = 0;         // _PyInterpreterFrame.prev_instr
    size_t frame_owner = 0;         // _PyInterpreterFrame.owner (a char)
    int skip_owner = -1;            // frames of this owner are C shims (3.12's CSTACK)
    // Code objects.
    size_t code_filename = 0, code_qualname = 0, code_firstlineno = 0, code_linetable = 0;
    size_t code_bytecode = 0;       // tp_basicsize: where co_code_adaptive starts
    size_t ascii_size = 0;          // sizeof(PyASCIIObject)
    size_t compact_size = 0;        // sizeof(PyCompactUnicodeObject)
  };
  using ThreadStateFn = void* (*)();
  using FlagFn = int (*)();

  PythonSupport DetectLocked();
  bool ReadCodeMembers(const void* code_type);
  // The chain check with safe reads; true when every code pointer met is a code object.
  bool CheckChain(const void* thread_state) const;
  const void* FirstFrame(const void* thread_state) const;
  // The raw frame of a live interpreter frame.
  PythonRawFrame RawFrame(const void* frame) const;

  std::mutex mu_;
  std::atomic<PythonSupport> support_{PythonSupport::kNotChecked};
  std::atomic<bool> chain_checked_{false};
  uint64_t next_look_ns_ = 0;
  uint32_t version_hex_ = 0;
  Layout layout_;
  const void* code_type_ = nullptr;  // &PyCode_Type
  ThreadStateFn thread_state_ = nullptr;
  FlagFn is_initialized_ = nullptr;
  FlagFn is_finalizing_ = nullptr;
};

// The string a CPython str object holds, as UTF-8 (compact strings: ASCII, Latin-1, UCS-2,
// UCS-4), for the layout whose PyASCIIObject and PyCompactUnicodeObject have these sizes.
bool ReadPythonString(const void* str, size_t ascii_size, size_t compact_size, std::string* out);
// The line of code unit `instruction` in a CPython 3.11+ location table.
int32_t LineFromLocationTable(const uint8_t* table, size_t size, int32_t first_line,
                              int32_t instruction);

}  // namespace warpscope

#endif  // WARPSCOPE_COLLECTORS_STACKS_PYTHON_FRAMES_H_
