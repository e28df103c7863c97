// The call-site rule (analyzers/measures/call_sites.h) on stacks read from small textproto
// traces: library frames skipped, the no-frames and no-stack cases, native stacks; and the
// model's stack tables with the import counters of ids that were never defined.
#include <string>
#include <vector>

#include "analyzers/measures/call_sites.h"
#include "analyzers/model/trace_model.h"
#include "gtest/gtest.h"
#include "tests/support/trace_test_util.h"

namespace warpscope {
namespace {

using ::warpscope::testing::FixtureWire;
using ::warpscope::testing::TextprotoToWire;
using ::warpscope::testing::WriteTempFile;

TraceModel LoadText(const std::string& packets) {
  const std::string text = R"pb(
    packet { header { format_major: 1 format_minor: 3 producer: "test" } }
  )pb" + packets + R"pb(
    packet { end_of_trace { timestamp_ns: 1 } }
  )pb";
  absl::StatusOr<TraceModel> model = TraceModel::Load(WriteTempFile(TextprotoToWire(text)));
  EXPECT_TRUE(model.ok()) << model.status();
  return std::move(*model);
}

uint64_t ImportCounter(const TraceModel& model, const std::string& name) {
  for (const StatCounter& c : model.import_counters) {
    if (c.name == name) return c.value;
  }
  return 0;
}

TEST(CallSites, LibraryFilesAndRuntimeModulesAreNotTheProgramsCode) {
  EXPECT_TRUE(IsLibraryPythonFile("/opt/venv/lib/python3.12/site-packages/torch/_tensor.py"));
  EXPECT_TRUE(IsLibraryPythonFile("/usr/lib/python3/dist-packages/numpy/core.py"));
  EXPECT_TRUE(IsLibraryPythonFile("/usr/lib/python3.11/threading.py"));
  EXPECT_TRUE(IsLibraryPythonFile("<frozen runpy>"));
  EXPECT_FALSE(IsLibraryPythonFile("/home/me/proj/train.py"));
  EXPECT_FALSE(IsLibraryPythonFile("/home/me/site/packages.py"));

  for (const char* runtime :
       {"/usr/lib/libcuda.so.1", "/usr/local/cuda/lib64/libcudart.so.13", "libcupti.so.2025.3",
        "/x/libwarpscope_core.so", "libcublasLt.so.13", "libcudnn_ops.so.9", "libnccl.so.2",
        "/site-packages/torch/lib/libtorch_cuda.so", "libc10_cuda.so", "libstdc++.so.6",
        "/lib/x86_64-linux-gnu/libc.so.6", "libpthread.so.0", "ld-linux-x86-64.so.2",
        "libnvrtc.so.13"}) {
    EXPECT_TRUE(IsRuntimeModule(runtime)) << runtime;
  }
  // Not "libc" and not "libcuda": the program's own libraries.
  for (const char* own : {"/home/me/libcustom.so", "/opt/app/libcudaops.so", "/opt/app/solver"}) {
    EXPECT_FALSE(IsRuntimeModule(own)) << own;
  }
}

TEST(CallSites, TheSyntheticTrainingStepNamesItsLines) {
  absl::StatusOr<TraceModel> model =
      TraceModel::Load(WriteTempFile(FixtureWire("synthetic/stacks.textproto")));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->stack_frames.size(), 9u);
  EXPECT_EQ(model->call_stacks.size(), 4u);
  EXPECT_EQ(model->api_stacks.size(), 6u);
  EXPECT_TRUE(model->import_counters.empty());

  // loss.item(): torch's Tensor.item (site-packages) is skipped for train.py:57.
  CallSite read = CallSiteOfCall(*model, 3);
  EXPECT_EQ(read.Display(), "train.py:57 train_step");
  EXPECT_EQ(read.file, "/home/me/proj/train.py");
  ASSERT_NE(read.frame, nullptr);
  EXPECT_EQ(read.frame->line, 57u);
  // A launch through torch's module code: the model's own forward.
  EXPECT_EQ(CallSiteOfCall(*model, 1).Display(), "model.py:12 Net.forward");
  // The autograd thread: libtorch_cuda and libc only.
  CallSite autograd = CallSiteOfCall(*model, 2);
  EXPECT_EQ(autograd.frame, nullptr);
  EXPECT_EQ(autograd.Display(), kNoPythonFrames);
  // cudaDeviceSynchronize was recorded without a stack.
  EXPECT_EQ(CallSiteOfCall(*model, 7).Display(), kNoStack);
  // gemm's two launches and relu's one: the most common site is gemm's line.
  EXPECT_EQ(MostCommonCallSite(*model, {1, 2, 4}).Display(), "model.py:12 Net.forward");
  EXPECT_EQ(MostCommonCallSite(*model, {}).Display(), kNoStack);
}

TEST(CallSites, OnlyLibraryPythonFramesGiveTheInnermostOne) {
  TraceModel model = LoadText(R"pb(
    packet { interned_string { id: 1 value: "/usr/lib/python3.12/threading.py" } }
    packet { interned_string { id: 2 value: "Thread.run" } }
    packet { interned_string { id: 3 value: "/opt/venv/lib/python3.12/site-packages/x/y.py" } }
    packet { interned_string { id: 4 value: "worker" } }
    packet { stack_frame { id: 1 kind: FRAME_KIND_PYTHON file_id: 3 function_id: 4 line: 9 } }
    packet { stack_frame { id: 2 kind: FRAME_KIND_PYTHON file_id: 1 function_id: 2 line: 1012 } }
    packet { call_stack { id: 1 frame_ids: [ 1, 2 ] } }
    packet { api_stack { correlation_id: 5 stack_id: 1 } }
  )pb");
  EXPECT_EQ(CallSiteOfCall(model, 5).Display(), "y.py:9 worker");
}

TEST(CallSites, NativeStacksSkipTheRuntimeModules) {
  TraceModel model = LoadText(R"pb(
    packet { interned_string { id: 1 value: "/usr/lib/x86_64-linux-gnu/libcudart.so.13" } }
    packet { interned_string { id: 2 value: "/opt/app/bin/solver" } }
    packet { interned_string { id: 3 value: "_Z5solvev" } }
    packet { interned_string { id: 4 value: "/lib/x86_64-linux-gnu/libc.so.6" } }
    packet { stack_frame { id: 1 kind: FRAME_KIND_NATIVE file_id: 1 module_offset: 4096 } }
    packet { stack_frame { id: 2 kind: FRAME_KIND_NATIVE file_id: 2 function_id: 3 module_offset: 6699 } }
    packet { stack_frame { id: 3 kind: FRAME_KIND_NATIVE file_id: 4 module_offset: 16 } }
    packet { call_stack { id: 1 frame_ids: [ 1, 2, 3 ] } }
    packet { api_stack { correlation_id: 8 stack_id: 1 } }
  )pb");
  const CallSite site = CallSiteOfCall(model, 8);
  EXPECT_EQ(site.Display(), "solver+0x1a2b solve()");  // demangled
  EXPECT_EQ(site.file, "/opt/app/bin/solver");
  EXPECT_EQ(FrameDisplay(model.stack_frames[0]), "libcudart.so.13+0x1000");
}

TEST(CallSites, IdsNeverDefinedAreCountedAndReadAsNoStack) {
  TraceModel model = LoadText(R"pb(
    packet { interned_string { id: 1 value: "/home/me/a.py" } }
    packet { stack_frame { id: 1 kind: FRAME_KIND_PYTHON file_id: 1 line: 3 } }
    packet { call_stack { id: 1 frame_ids: [ 7, 1 ] } }
    packet { api_stack { correlation_id: 1 stack_id: 1 } }
    packet { api_stack { correlation_id: 2 stack_id: 99 } }
  )pb");
  EXPECT_EQ(ImportCounter(model, "reader.undefined_stack_frame_refs"), 1u);
  EXPECT_EQ(ImportCounter(model, "reader.undefined_stack_refs"), 1u);
  ASSERT_EQ(model.call_stacks.size(), 1u);
  EXPECT_EQ(model.call_stacks[0].frames.size(), 1u);  // frame 7 left out
  EXPECT_EQ(CallSiteOfCall(model, 1).Display(), "a.py:3");
  EXPECT_EQ(CallSiteOfCall(model, 2).Display(), kNoStack);
  EXPECT_EQ(model.StackOfCall(3), nullptr);
}

}  // namespace
}  // namespace warpscope
