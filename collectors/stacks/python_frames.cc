// The GIL-free CPython frame reader (see python_frames.h).
#include "collectors/stacks/python_frames.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

namespace warpscope {
namespace {

template <typename T>
T Load(const void* base, size_t offset) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + offset, sizeof(T));
  return value;
}

const void* LoadPointer(const void* base, size_t offset) {
  return Load<const void*>(base, offset);
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Reads `size` bytes at `address` without faulting: write(2) to a pipe fails with EFAULT on
// an address that is not mapped, where a load would crash the host program. Used only for the
// one-time check of the layout.
class SafeReader {
 public:
  SafeReader() {
    if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
  }
  ~SafeReader() {
    if (fds_[0] >= 0) close(fds_[0]);
    if (fds_[1] >= 0) close(fds_[1]);
  }
  bool Read(const void* address, void* out, size_t size) const {
    if (fds_[0] < 0 || address == nullptr) return false;
    const ssize_t written = write(fds_[1], address, size);
    if (written != static_cast<ssize_t>(size)) {
      if (written > 0) Drain();
      return false;
    }
    return read(fds_[0], out, size) == static_cast<ssize_t>(size);
  }
  template <typename T>
  bool Load(const void* base, size_t offset, T* out) const {
    return base != nullptr && Read(static_cast<const char*>(base) + offset, out, sizeof(T));
  }

 private:
  void Drain() const {
    char sink[64];
    while (read(fds_[0], sink, sizeof sink) > 0) {
    }
  }
  int fds_[2] = {-1, -1};
};

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// CPython's location-table varints: 6 bits a byte, bit 6 says another byte follows.
uint32_t ReadVarint(const uint8_t* table, size_t size, size_t* at) {
  if (*at >= size) return 0;
  uint8_t b = table[(*at)++];
  uint32_t value = b & 63;
  unsigned shift = 0;
  while ((b & 64) != 0 && *at < size && shift < 26) {
    b = table[(*at)++];
    shift += 6;
    value |= static_cast<uint32_t>(b & 63) << shift;
  }
  return value;
}

int32_t ReadSignedVarint(const uint8_t* table, size_t size, size_t* at) {
  const uint32_t u = ReadVarint(table, size, at);
  return (u & 1) != 0 ? -static_cast<int32_t>(u >> 1) : static_cast<int32_t>(u >> 1);
}

// Offsets in PyTypeObject and PyMemberDef, unchanged from 3.8 to 3.13 on 64-bit Linux.
constexpr size_t kTypeBasicSize = 32;
constexpr size_t kTypeMembers = 240;
constexpr size_t kMemberDefSize = 40;
constexpr size_t kMemberOffset = 16;
constexpr size_t kObjectType = 8;  // PyObject.ob_type
constexpr size_t kBytesSize = 16;  // PyVarObject.ob_size
constexpr size_t kBytesData = 32;  // PyBytesObject.ob_sval
constexpr int kMaxChain = 4096;    // a longer chain is taken for a loop

}  // namespace

std::string_view PythonSupportName(PythonSupport support) {
  switch (support) {
    case PythonSupport::kNotChecked: return "not checked";
    case PythonSupport::kNoPython: return "no Python in the process";
    case PythonSupport::kUnsupportedVersion: return "a Python version whose frames warpscope cannot read";
    case PythonSupport::kLayoutMismatch: return "the Python frame layout did not check out";
    case PythonSupport::kReady: return "ready";
  }
  return "unknown";
}

bool ReadPythonString(const void* str, size_t ascii_size, size_t compact_size, std::string* out) {
  out->clear();
  if (str == nullptr) return false;
  const uint32_t state = Load<uint32_t>(str, 32);
  const int64_t length = Load<int64_t>(str, 16);
  const unsigned kind = (state >> 2) & 7;
  const bool compact = ((state >> 5) & 1) != 0;
  const bool ascii = ((state >> 6) & 1) != 0;
  if (!compact || length < 0 || length > (1 << 20)) return false;
  if (ascii) {
    out->assign(static_cast<const char*>(str) + ascii_size, static_cast<size_t>(length));
    return true;
  }
  const char* utf8 = static_cast<const char*>(LoadPointer(str, ascii_size + 8));
  const int64_t utf8_length = Load<int64_t>(str, ascii_size);
  if (utf8 != nullptr && utf8_length >= 0) {
    out->assign(utf8, static_cast<size_t>(utf8_length));
    return true;
  }
  const char* data = static_cast<const char*>(str) + compact_size;
  for (int64_t i = 0; i < length; ++i) {
    uint32_t cp = 0;
    if (kind == 1) {
      cp = static_cast<uint8_t>(data[i]);
    } else if (kind == 2) {
      cp = Load<uint16_t>(data, static_cast<size_t>(i) * 2);
    } else if (kind == 4) {
      cp = Load<uint32_t>(data, static_cast<size_t>(i) * 4);
    } else {
      return false;
    }
    AppendUtf8(cp, out);
  }
  return true;
}

int32_t LineFromLocationTable(const uint8_t* table, size_t size, int32_t first_line,
                              int32_t instruction) {
  int32_t line = first_line;
  int64_t address = 0;  // in code units
  size_t at = 0;
  while (at < size) {
    const uint8_t head = table[at++];
    const unsigned code = (head >> 3) & 15;
    const int64_t units = (head & 7) + 1;
    bool has_line = true;
    if (code == 15) {         // no location
      has_line = false;
    } else if (code == 14) {  // long form: line delta, end line, column, end column
      line += ReadSignedVarint(table, size, &at);
      ReadVarint(table, size, &at);
      ReadVarint(table, size, &at);
      ReadVarint(table, size, &at);
    } else if (code == 13) {  // no column
      line += ReadSignedVarint(table, size, &at);
    } else if (code >= 10) {  // one line: delta 0..2, two column bytes
      line += static_cast<int32_t>(code) - 10;
      at += 2;
    } else {                  // short form: same line, one column byte
      at += 1;
    }
    if (instruction >= address && instruction < address + units) {
      return has_line && line > 0 ? line : 0;
    }
    address += units;
  }
  return 0;
}

PythonSupport PythonFrameReader::Detect() {
  const PythonSupport s = support_.load(std::memory_order_acquire);
  if (s != PythonSupport::kNotChecked && s != PythonSupport::kNoPython) return s;
  std::lock_guard<std::mutex> lock(mu_);
  return DetectLocked();
}

PythonSupport PythonFrameReader::DetectLocked() {
  const PythonSupport s = support_.load(std::memory_order_acquire);
  if (s != PythonSupport::kNotChecked && s != PythonSupport::kNoPython) return s;
  const uint64_t now = MonotonicNs();
  if (s == PythonSupport::kNoPython && now < next_look_ns_) return s;
  next_look_ns_ = now + 1000000000ull;

  auto* version = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"));
  if (version == nullptr) {
    // Before 3.11 there is no Py_Version; such an interpreter is one the reader cannot read.
    const bool older_python = dlsym(RTLD_DEFAULT, "Py_GetVersion") != nullptr;
    support_.store(older_python ? PythonSupport::kUnsupportedVersion : PythonSupport::kNoPython,
                   std::memory_order_release);
    return support_.load();
  }
  version_hex_ = static_cast<uint32_t>(*version);
  thread_state_ = reinterpret_cast<ThreadStateFn>(
      dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  is_initialized_ = reinterpret_cast<FlagFn>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  is_finalizing_ = reinterpret_cast<FlagFn>(dlsym(RTLD_DEFAULT, "_Py_IsFinalizing"));
  code_type_ = dlsym(RTLD_DEFAULT, "PyCode_Type");
  const unsigned major = version_hex_ >> 24, minor = (version_hex_ >> 16) & 0xFF;
  Layout l;
  bool known = major == 3 && thread_state_ != nullptr && is_initialized_ != nullptr &&
               code_type_ != nullptr;
  if (known && minor == 11) {
    // PyThreadState.cframe → _PyCFrame.current_frame → _PyInterpreterFrame.
    l.ts_frame_holder = 56, l.ts_frame_indirect = true, l.holder_current = 8;
    l.frame_code = 32, l.frame_previous = 48, l.frame_instr = 56, l.frame_owner = 69;
    l.ascii_size = 48, l.compact_size = 72;
  } else if (known && minor == 12) {
    l.ts_frame_holder = 56, l.ts_frame_indirect = true, l.holder_current = 0;
    l.frame_code = 0, l.frame_previous = 8, l.frame_instr = 56, l.frame_owner = 70;
    l.skip_owner = 3;  // FRAME_OWNED_BY_CSTACK: the entry shim of a C call into Python
    l.ascii_size = 40, l.compact_size = 56;
  } else {
    known = false;
  }
  layout_ = l;
  if (!known || !ReadCodeMembers(code_type_)) {
    support_.store(PythonSupport::kUnsupportedVersion, std::memory_order_release);
    return PythonSupport::kUnsupportedVersion;
  }
  support_.store(PythonSupport::kReady, std::memory_order_release);
  return PythonSupport::kReady;
}

bool PythonFrameReader::ReadCodeMembers(const void* code_type) {
  SafeReader safe;
  int64_t basic_size = 0;
  const void* members = nullptr;
  if (!safe.Load(code_type, kTypeBasicSize, &basic_size) ||
      !safe.Load(code_type, kTypeMembers, &members) || members == nullptr || basic_size <= 0) {
    return false;
  }
  layout_.code_bytecode = static_cast<size_t>(basic_size);
  int found = 0;
  for (int i = 0; i < 64; ++i) {
    const char* member = static_cast<const char*>(members) + i * kMemberDefSize;
    const char* name = nullptr;
    int64_t offset = 0;
    if (!safe.Load(member, 0, &name) || name == nullptr) break;
    if (!safe.Load(member, kMemberOffset, &offset) || offset <= 0 || offset >= basic_size) break;
    char text[32] = {0};
    if (!safe.Read(name, text, 16)) continue;
    text[16] = 0;
    const std::string_view n(text);
    const size_t at = static_cast<size_t>(offset);
    if (n == "co_filename") layout_.code_filename = at, ++found;
    if (n == "co_qualname") layout_.code_qualname = at, ++found;
    if (n == "co_firstlineno") layout_.code_firstlineno = at, ++found;
    if (n == "co_linetable") layout_.code_linetable = at, ++found;
  }
  return found == 4;
}

const void* PythonFrameReader::FirstFrame(const void* thread_state) const {
  const void* holder = LoadPointer(thread_state, layout_.ts_frame_holder);
  if (!layout_.ts_frame_indirect || holder == nullptr) return holder;
  return LoadPointer(holder, layout_.holder_current);
}

bool PythonFrameReader::CheckChain(const void* thread_state) const {
  SafeReader safe;
  const void* holder = nullptr;
  if (!safe.Load(thread_state, layout_.ts_frame_holder, &holder)) return false;
  const void* frame = holder;
  if (layout_.ts_frame_indirect && holder != nullptr &&
      !safe.Load(holder, layout_.holder_current, &frame)) {
    return false;
  }
  for (int i = 0; frame != nullptr && i < kMaxChain; ++i) {
    const void* code = nullptr;
    const void* type = nullptr;
    const void* filename = nullptr;
    if (!safe.Load(frame, layout_.frame_code, &code) || !safe.Load(code, kObjectType, &type) ||
        type != code_type_ || !safe.Load(code, layout_.code_filename, &filename)) {
      return false;
    }
    const void* filename_type = nullptr;
    char filename_head[48];
    if (!safe.Load(filename, kObjectType, &filename_type) ||
        !safe.Read(filename, filename_head, layout_.ascii_size)) {
      return false;
    }
    if (!safe.Load(frame, layout_.frame_previous, &frame)) return false;
  }
  return true;
}

PythonRawFrame PythonFrameReader::RawFrame(const void* frame) const {
  const Layout& l = layout_;
  const char* code = static_cast<const char*>(LoadPointer(frame, l.frame_code));
  const char* instr = static_cast<const char*>(LoadPointer(frame, l.frame_instr));
  PythonRawFrame f;
  f.code = code;
  f.instruction = static_cast<int32_t>((instr - (code + l.code_bytecode)) / 2);
  f.filename = LoadPointer(code, l.code_filename);
  f.first_line = Load<int32_t>(code, l.code_firstlineno);
  return f;
}

int PythonFrameReader::Read(PythonRawFrame* out, int max, int outer, PythonCut* cut) {
  *cut = PythonCut();
  PythonSupport s = support_.load(std::memory_order_acquire);
  if (s == PythonSupport::kNotChecked || s == PythonSupport::kNoPython) s = Detect();
  if (s != PythonSupport::kReady || max <= 0) return 0;
  if (is_initialized_() == 0) return 0;
  if (is_finalizing_ != nullptr && is_finalizing_() != 0) return 0;
  const void* thread_state = thread_state_();
  if (thread_state == nullptr) return 0;
  if (!chain_checked_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!chain_checked_.load(std::memory_order_relaxed)) {
      if (!CheckChain(thread_state)) {
        support_.store(PythonSupport::kLayoutMismatch, std::memory_order_release);
        return 0;
      }
      // A chain with no frame proves nothing: check again on the next read.
      if (FirstFrame(thread_state) != nullptr) {
        chain_checked_.store(true, std::memory_order_release);
      }
    }
  }
  const Layout& l = layout_;
  outer = outer < 0 ? 0 : outer > kMaxOuter ? kMaxOuter : outer >= max ? max - 1 : outer;
  const int inner = max - outer;
  // Past the innermost frames, the last `outer` frames met (a ring): the outermost ones once
  // the chain ends. Only the frame pointers: a frame is read once it is known to be kept.
  const void* ring[kMaxOuter];
  int past = 0, next = 0;  // frames met past the innermost; the ring's oldest slot
  int n = 0;
  const void* frame = FirstFrame(thread_state);
  for (int walked = 0; frame != nullptr && walked < kMaxChain; ++walked) {
    if (l.skip_owner >= 0 && Load<char>(frame, l.frame_owner) == l.skip_owner) {
      frame = LoadPointer(frame, l.frame_previous);
      continue;
    }
    if (n < inner) {
      out[n++] = RawFrame(frame);
    } else if (outer == 0) {
      cut->truncated = true;
      return n;
    } else {
      ring[next] = frame;
      next = next + 1 == outer ? 0 : next + 1;
      ++past;
    }
    frame = LoadPointer(frame, l.frame_previous);
  }
  // A chain longer than kMaxChain is taken for a loop: its outermost frames are not known.
  if (frame != nullptr) {
    cut->truncated = past > 0;
    return n;
  }
  const bool deeper = past > outer;
  for (int i = 0; i < past && i < outer; ++i) {
    out[n++] = RawFrame(ring[deeper ? (next + i) % outer : i]);
  }
  if (deeper) *cut = PythonCut{true, outer, past - outer};
  return n;
}

bool PythonFrameReader::Describe(const void* code, PythonCodeInfo* info) const {
  if (support() != PythonSupport::kReady || code == nullptr) return false;
  const Layout& l = layout_;
  info->first_line = Load<int32_t>(code, l.code_firstlineno);
  return ReadPythonString(LoadPointer(code, l.code_filename), l.ascii_size, l.compact_size,
                          &info->file) &&
         ReadPythonString(LoadPointer(code, l.code_qualname), l.ascii_size, l.compact_size,
                          &info->function);
}

int32_t PythonFrameReader::LineOf(const void* code, int32_t instruction) const {
  if (support() != PythonSupport::kReady || code == nullptr) return 0;
  const Layout& l = layout_;
  const void* table = LoadPointer(code, l.code_linetable);
  if (table == nullptr) return 0;
  const int64_t size = Load<int64_t>(table, kBytesSize);
  if (size <= 0) return 0;
  const auto* data = static_cast<const uint8_t*>(table) + kBytesData;
  // An incomplete frame (its first instruction not yet run) points before the bytecode.
  if (instruction < 0) instruction = 0;
  return LineFromLocationTable(data, static_cast<size_t>(size),
                               Load<int32_t>(code, l.code_firstlineno), instruction);
}

}  // namespace warpscope
