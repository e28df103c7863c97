// Stack interning with native stacks (this test program has no Python), the CPython location
// table and string layouts. The Python frame walk itself is tested inside a real interpreter
// (test_python_frames.py).
#include "collectors/stacks/stack_table.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace warpscope {
namespace {

class VectorSink final : public StackSink {
 public:
  uint64_t InternString(std::string_view value) override {
    if (value.empty()) return 0;
    strings.emplace_back(value);
    return strings.size();
  }
  void Write(const StackFrameRecord& frame) override { frames.push_back(frame); }
  void Write(const CallStackRecord& stack) override { stacks.push_back(stack); }
  std::vector<std::string> strings;
  std::vector<StackFrameRecord> frames;
  std::vector<CallStackRecord> stacks;
};

// Two call sites in separate functions that the compiler keeps apart.
__attribute__((noinline)) StackCapture SiteA(StackTable& t) {
  StackCapture c = t.Capture();
  asm volatile("" ::: "memory");
  return c;
}
__attribute__((noinline)) StackCapture SiteB(StackTable& t) {
  asm volatile("nop");  // not the same code as SiteA, which the compiler would fold into one
  StackCapture c = t.Capture();
  asm volatile("" ::: "memory");
  return c;
}

TEST(StackTableTest, NativeStacksAreInternedOncePerCallSite) {
  VectorSink sink;
  StackTable table(&sink, 16, /*timed=*/true);
  StackCapture a[2];
  volatile int times = 2;  // not unrolled: one call site, twice
  for (int i = 0; i < times; ++i) a[i] = SiteA(table);
  const StackCapture a1 = a[0], a2 = a[1], b = SiteB(table);
  EXPECT_EQ(a1.source, StackSource::kNative);
  ASSERT_NE(a1.stack_id, 0u);
  EXPECT_EQ(a1.stack_id, a2.stack_id);
  EXPECT_NE(a1.stack_id, b.stack_id);
  ASSERT_EQ(sink.stacks.size(), 2u);  // each written once
  // Frames shared by both stacks (the test's callers) are written once.
  std::map<uint64_t, int> uses;
  for (const CallStackRecord& s : sink.stacks) {
    for (uint64_t id : s.frame_ids) ++uses[id];
  }
  EXPECT_EQ(uses.size(), sink.frames.size());
  for (const StackFrameRecord& f : sink.frames) {
    EXPECT_EQ(f.kind, FrameKind::kNative);
    ASSERT_NE(f.file_id, 0u);  // every frame names its module
  }
  // The innermost frames are this program's (here the table is linked into it), and its
  // functions are named from its symbol table although it exports none of them.
  const StackFrameRecord& innermost = sink.frames[sink.stacks[0].frame_ids[0] - 1];
  EXPECT_NE(sink.strings[innermost.file_id - 1].find("stacks_test"), std::string::npos);
  std::vector<std::string> functions;
  for (uint64_t id : sink.stacks[0].frame_ids) {
    const StackFrameRecord& f = sink.frames[id - 1];
    functions.push_back(f.function_id != 0 ? sink.strings[f.function_id - 1] : "");
  }
  EXPECT_NE(std::find_if(functions.begin(), functions.end(),
                         [](const std::string& f) { return f.find("SiteA") != std::string::npos; }),
            functions.end());
  EXPECT_NE(std::find_if(functions.begin(), functions.end(),
                         [](const std::string& f) {
                           return f.find("NativeStacksAreInternedOncePerCallSite") !=
                                  std::string::npos;
                         }),
            functions.end());
  const StackTableCounts c = table.counts();
  EXPECT_EQ(c.captures, 3u);
  EXPECT_EQ(c.no_stack, 0u);
  EXPECT_EQ(c.stacks, 2u);
  EXPECT_EQ(c.frames, sink.frames.size());
  EXPECT_GT(c.capture_ns, 0u);
}

TEST(StackTableTest, StacksDeeperThanTheDepthAreCutAndSaySo) {
  VectorSink sink;
  StackTable table(&sink, 2, false);
  ASSERT_NE(SiteA(table).stack_id, 0u);
  ASSERT_EQ(sink.stacks.size(), 1u);
  EXPECT_EQ(sink.stacks[0].frame_ids.size(), 2u);
  EXPECT_TRUE(sink.stacks[0].truncated);
}

// SiteA below `depth` more frames of one recursive function: the innermost frames are the
// same return addresses whatever the depth.
__attribute__((noinline)) StackCapture Below(StackTable& t, int depth) {
  StackCapture c = depth <= 0 ? SiteA(t) : Below(t, depth - 1);
  asm volatile("" ::: "memory");
  return c;
}
// The same frames below two different callers, far out.
__attribute__((noinline)) StackCapture FromCallerX(StackTable& t) {
  StackCapture c = Below(t, 12);
  asm volatile("" ::: "memory");
  return c;
}
__attribute__((noinline)) StackCapture FromCallerY(StackTable& t) {
  asm volatile("nop");
  StackCapture c = Below(t, 12);
  asm volatile("" ::: "memory");
  return c;
}

TEST(StackTableTest, AStackSeenBeforeIsFoundByTheFrameSizesLearned) {
  VectorSink sink;
  StackTable table(&sink, 64, false);
  // Each stack is unwound once; the two captures after it walk the frame sizes learned and
  // find the same stack.
  StackCapture at[4][3];
  for (int round = 0; round < 3; ++round) {
    at[0][round] = Below(table, 20);
    at[1][round] = Below(table, 21);
    at[2][round] = FromCallerX(table);
    at[3][round] = FromCallerY(table);
  }
  for (int s = 0; s < 4; ++s) {
    ASSERT_NE(at[s][0].stack_id, 0u);
    EXPECT_EQ(at[s][1].stack_id, at[s][0].stack_id) << s;
    EXPECT_EQ(at[s][2].stack_id, at[s][0].stack_id) << s;
  }
  // Up to 8 captures walk the frame sizes learned. The thread's caches are small and keyed by
  // address, so where the code loads a capture now and then unwinds again (2 runs in 300 found
  // 7 and 4); a walk that never finds a stack it knew finds none.
  EXPECT_GE(table.counts().native_known, 2u);
  EXPECT_LE(table.counts().native_known, 8u);
  // The same innermost frames at another depth, or under another caller far out, are
  // other stacks.
  ASSERT_EQ(sink.stacks.size(), 4u);
  EXPECT_NE(at[0][0].stack_id, at[1][0].stack_id);
  EXPECT_NE(at[2][0].stack_id, at[3][0].stack_id);
  EXPECT_EQ(sink.stacks[1].frame_ids.size(), sink.stacks[0].frame_ids.size() + 1);
  EXPECT_EQ(sink.stacks[2].frame_ids.size(), sink.stacks[3].frame_ids.size());
}

TEST(StackTableTest, ThreadsShareTheTable) {
  VectorSink sink;
  StackTable table(&sink, 16, false);
  StackCapture from_thread;
  std::thread t([&] { from_thread = SiteA(table); });
  t.join();
  EXPECT_NE(from_thread.stack_id, 0u);
  // Another thread's stack has other callers (std::thread's start) than the main thread's.
  EXPECT_NE(SiteA(table).stack_id, from_thread.stack_id);
  EXPECT_EQ(table.counts().stacks, 2u);
}

// Location tables as CPython 3.11+ writes them (Objects/locations.md): entries of code units
// with line deltas in four forms.
TEST(LocationTableTest, EveryEntryForm) {
  const uint8_t table[] = {
      0x80 | (13 << 3) | 0, 0x00,              // 1 unit, no column: delta 0 → line 10
      0x80 | (11 << 3) | 1, 0x04, 0x08,        // 2 units, one-line form: delta +1 → 11
      0x80 | (3 << 3) | 2, 0x05,               // 3 units, short form: same line → 11
      0x80 | (14 << 3) | 0, 0x0A, 0x00, 0x01, 0x02,  // long form: delta +5 → 16
      0x80 | (15 << 3) | 1,                    // 2 units, no location
      0x80 | (13 << 3) | 0, 0x05,              // no column: delta -2 → 14
  };
  const int32_t first = 10;
  EXPECT_EQ(LineFromLocationTable(table, sizeof table, first, 0), 10);
  EXPECT_EQ(LineFromLocationTable(table, sizeof table, first, 1), 11);
  EXPECT_EQ(LineFromLocationTable(table, sizeof table, first, 2), 11);
  EXPECT_EQ(LineFromLocationTable(table, sizeof table, first, 5), 11);
  EXPECT_EQ(LineFromLocationTable(table, sizeof table, first, 6), 16);
  EXPECT_EQ(LineFromLocationTable(table, sizeof table, first, 7), 0);
  EXPECT_EQ(LineFromLocationTable(table, sizeof table, first, 8), 0);
  EXPECT_EQ(LineFromLocationTable(table, sizeof table, first, 9), 14);
  EXPECT_EQ(LineFromLocationTable(table, sizeof table, first, 10), 0);  // past the end
}

TEST(ElfSymbolsTest, NamesAFunctionOfThisProgramFromItsFile) {
  ElfSymbols symbols;
  ASSERT_TRUE(symbols.Load("/proc/self/exe"));
  EXPECT_GT(symbols.size(), 10u);
  Dl_info info;
  const auto address = reinterpret_cast<uintptr_t>(&SiteB);
  ASSERT_NE(dladdr(reinterpret_cast<void*>(address), &info), 0);
  const uint64_t at = symbols.absolute() ? address + 4
                                         : address + 4 - reinterpret_cast<uintptr_t>(info.dli_fbase);
  EXPECT_NE(symbols.Find(at).find("SiteB"), std::string_view::npos) << symbols.Find(at);
  EXPECT_TRUE(symbols.Find(0).empty());
  EXPECT_FALSE(symbols.Load("/nonexistent/module.so"));
  EXPECT_FALSE(symbols.Load("/proc/self/status"));  // not ELF
}

// A compact str as CPython 3.12 lays it out (PyASCIIObject 40 bytes, compact 56).
std::vector<uint8_t> CompactString(uint32_t kind, bool ascii, const void* data, size_t units) {
  std::vector<uint8_t> o(56 + units * kind + 4, 0);
  const int64_t length = static_cast<int64_t>(units);
  std::memcpy(o.data() + 16, &length, 8);
  const uint32_t state = (kind << 2) | (1u << 5) | (ascii ? 1u << 6 : 0);
  std::memcpy(o.data() + 32, &state, 4);
  std::memcpy(o.data() + (ascii ? 40 : 56), data, units * kind);
  return o;
}

TEST(PythonStringTest, AsciiLatin1Ucs2AndUcs4BecomeUtf8) {
  std::string out;
  auto ascii = CompactString(1, true, "train.py", 8);
  ASSERT_TRUE(ReadPythonString(ascii.data(), 40, 56, &out));
  EXPECT_EQ(out, "train.py");
  const uint8_t latin1[] = {'g', 'r', 0xF6, 0xDF, 'e'};
  auto l1 = CompactString(1, false, latin1, 5);
  ASSERT_TRUE(ReadPythonString(l1.data(), 40, 56, &out));
  EXPECT_EQ(out, "gr\xC3\xB6\xC3\x9F" "e");
  const uint16_t ucs2[] = {0x03C9};
  auto u2 = CompactString(2, false, ucs2, 1);
  ASSERT_TRUE(ReadPythonString(u2.data(), 40, 56, &out));
  EXPECT_EQ(out, "\xCF\x89");
  const uint32_t ucs4[] = {0x1F600};
  auto u4 = CompactString(4, false, ucs4, 1);
  ASSERT_TRUE(ReadPythonString(u4.data(), 40, 56, &out));
  EXPECT_EQ(out, "\xF0\x9F\x98\x80");
  auto legacy = ascii;
  legacy[32] &= ~(1u << 5);  // not compact: refused
  EXPECT_FALSE(ReadPythonString(legacy.data(), 40, 56, &out));
}

}  // namespace
}  // namespace warpscope
