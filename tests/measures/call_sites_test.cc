// The call-site rule (analyzers/measures/call_sites.h) on stacks read from small textproto
// traces: library frames skipped, the no-frames and no-stack cases, native stacks, stacks cut
// in the middle (the site past the cut, in summary's syncs too); and the
// model's stack tables with the import counters of ids that were never defined.
#include <string>
#include <vector>

#include "analyzers/analyses/summary.h"
#include "analyzers/measures/call_sites.h"
#include "analyzers/model/trace_model.h"
#include "gmock/gmock.h"
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
  // Generated code: Inductor's and Triton's caches, exec'd and FX-generated code.
  EXPECT_TRUE(IsLibraryPythonFile("/tmp/torchinductor_me/ab/cabcdef123.py"));
  EXPECT_TRUE(IsLibraryPythonFile("/home/me/.triton/cache/XYZ/launcher.py"));
  EXPECT_TRUE(IsLibraryPythonFile("<string>"));
  EXPECT_TRUE(IsLibraryPythonFile("<eval_with_key>.5"));
  EXPECT_FALSE(IsLibraryPythonFile("<stdin>"));  // what the user typed
  EXPECT_FALSE(IsLibraryPythonFile("/home/me/proj/torchinductor.py"));
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

TEST(CallSites, GeneratedCodeIsPassedForTheLineThatCalledTheCompiledModel) {
  // torch.compile: the allocation is made inside Inductor's generated Runner.call, under
  // torch's own frames, called from the user's line.
  TraceModel model = LoadText(R"pb(
    packet { interned_string { id: 1 value: "/tmp/torchinductor_me/x4/cx4abc.py" } }
    packet { interned_string { id: 2 value: "Runner.call" } }
    packet { interned_string { id: 3 value: "/opt/venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py" } }
    packet { interned_string { id: 4 value: "_fn" } }
    packet { interned_string { id: 5 value: "<eval_with_key>.7" } }
    packet { interned_string { id: 6 value: "forward" } }
    packet { interned_string { id: 7 value: "/home/me/proj/train.py" } }
    packet { interned_string { id: 8 value: "main" } }
    packet { stack_frame { id: 1 kind: FRAME_KIND_PYTHON file_id: 1 function_id: 2 line: 88 } }
    packet { stack_frame { id: 2 kind: FRAME_KIND_PYTHON file_id: 5 function_id: 6 line: 4 } }
    packet { stack_frame { id: 3 kind: FRAME_KIND_PYTHON file_id: 3 function_id: 4 line: 655 } }
    packet { stack_frame { id: 4 kind: FRAME_KIND_PYTHON file_id: 7 function_id: 8 line: 31 } }
    packet { call_stack { id: 1 frame_ids: [ 1, 2, 3, 4 ] } }
    packet { call_stack { id: 2 frame_ids: [ 1, 2, 3 ] } }
    packet { api_stack { correlation_id: 5 stack_id: 1 } }
    packet { api_stack { correlation_id: 6 stack_id: 2 } }
  )pb");
  EXPECT_EQ(CallSiteOfCall(model, 5).Display(), "train.py:31 main");
  // With no line of the program's own, still the innermost frame.
  EXPECT_EQ(CallSiteOfCall(model, 6).Display(), "cx4abc.py:88 Runner.call");
}

// A Python stack of 60 frames cut to 32 as the recorder cuts it: the innermost 24 (generated
// code and torch's, as under torch.compile) and the outermost 8, the program's entry, with
// the user's line `train.py:31 main` among them; `inner_line`, when set, puts a program frame
// among the innermost.
TraceModel CutCompiledStack(int inner_line) {
  std::string text = R"pb(
    packet { interned_string { id: 1 value: "/tmp/torchinductor_me/x4/cx4abc.py" } }
    packet { interned_string { id: 2 value: "Runner.call" } }
    packet { interned_string { id: 3 value: "/opt/venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py" } }
    packet { interned_string { id: 4 value: "_fn" } }
    packet { interned_string { id: 5 value: "/home/me/proj/train.py" } }
    packet { interned_string { id: 6 value: "main" } }
    packet { interned_string { id: 7 value: "<module>" } }
    packet { interned_string { id: 8 value: "/home/me/proj/model.py" } }
    packet { interned_string { id: 9 value: "Net.forward" } }
    packet { stack_frame { id: 1 kind: FRAME_KIND_PYTHON file_id: 1 function_id: 2 line: 88 } }
    packet { stack_frame { id: 3 kind: FRAME_KIND_PYTHON file_id: 5 function_id: 6 line: 31 } }
    packet { stack_frame { id: 4 kind: FRAME_KIND_PYTHON file_id: 5 function_id: 7 line: 40 } }
  )pb";
  std::string ids = "1";
  for (int i = 1; i < 24; ++i) {  // torch's frames, each its own line; one the model's
    const bool own = inner_line != 0 && i == 12;
    text += "packet { stack_frame { id: " + std::to_string(100 + i) +
            " kind: FRAME_KIND_PYTHON file_id: " + (own ? "8" : "3") +
            " function_id: " + (own ? "9" : "4") + " line: " +
            std::to_string(own ? inner_line : 600 + i) + " } }\n";
    ids += ", " + std::to_string(100 + i);
  }
  for (int i = 1; i <= 6; ++i) ids += ", " + std::to_string(100 + i);  // still torch's
  ids += ", 3, 4";
  text += "packet { call_stack { id: 1 frame_ids: [ " + ids +
          " ] truncated: true outermost: 8 left_out: 28 } }\n";
  // A stream synchronize made there, which blocked the host for 27 us.
  text += R"pb(
    packet { interned_string { id: 10 value: "cudaStreamSynchronize" } }
    packet { api_stack { correlation_id: 5 stack_id: 1 timestamp_ns: 34000 name_id: 10 } }
    packet { api_call { domain: API_DOMAIN_RUNTIME name_id: 10 start_ns: 34000 duration_ns: 27000 thread_id: 1 correlation_id: 5 callback_id: 131 } }
    packet { synchronization { kind: SYNC_KIND_STREAM start_ns: 34500 duration_ns: 26000 context_id: 1 stream_id: 7 correlation_id: 5 thread_id: 1 } }
  )pb";
  return LoadText(text);
}

TEST(CallSites, AStackCutInTheMiddleKeepsTheProgramsOutermostLine) {
  TraceModel model = CutCompiledStack(0);
  ASSERT_EQ(model.call_stacks.size(), 1u);
  const CallStackInfo& stack = model.call_stacks[0];
  EXPECT_EQ(stack.frames.size(), 32u);
  EXPECT_EQ(stack.outermost, 8u);
  EXPECT_EQ(stack.left_out, 28u);
  // Inductor's Runner.call is passed for the user's line, found past the cut and marked so.
  const CallSite site = CallSiteOfCall(model, 5);
  EXPECT_TRUE(site.past_cut);
  EXPECT_EQ(site.Display(), "train.py:31 main [stack cut]");
  // The stack as the exports and the timeline list it: the frames left out between.
  const std::vector<std::string> lines = StackLines(model, stack);
  ASSERT_EQ(lines.size(), 33u);
  EXPECT_EQ(lines[0], "cx4abc.py:88 Runner.call");
  EXPECT_EQ(lines[24], "... 28 frames left out ...");
  EXPECT_EQ(lines[31], "train.py:31 main");
  EXPECT_EQ(lines[32], "train.py:40 <module>");

  // A program frame among the innermost comes first, and is not past the cut.
  TraceModel inner = CutCompiledStack(12);
  const CallSite near = CallSiteOfCall(inner, 5);
  EXPECT_FALSE(near.past_cut);
  EXPECT_EQ(near.Display(), "model.py:12 Net.forward");
}

TEST(CallSites, SummarysSyncsShowALineFoundPastTheCut) {
  TraceModel model = CutCompiledStack(0);
  SummaryOptions options;
  ASSERT_TRUE(ParseSummaryReports("syncs", &options).ok());
  const std::vector<TraceSummary> summaries = SummarizeTraces({&model}, {"t.wst"}, options);
  ASSERT_EQ(summaries.size(), 1u);
  ASSERT_EQ(summaries[0].syncs.size(), 1u);
  EXPECT_TRUE(summaries[0].syncs[0].stack_cut);
  const Report report = SummaryReport(summaries, options);
  const std::string text = RenderReport(report, OutputFormat::kTable).value_or("");
  EXPECT_THAT(text, ::testing::HasSubstr("train.py:31"));
  EXPECT_THAT(text, ::testing::HasSubstr("main [stack cut]"));
  const std::string csv = RenderReport(report, OutputFormat::kCsv).value_or("");
  EXPECT_THAT(csv, ::testing::HasSubstr(",/home/me/proj/train.py,31,true"));
  EXPECT_THAT(csv, ::testing::Not(::testing::HasSubstr("[stack cut]")));
}

TEST(CallSites, AStackCutAtItsOuterEndEndsWithTheMark) {
  // As native stacks are cut, and Python ones of format 1.5: the outer frames left out.
  TraceModel model = LoadText(R"pb(
    packet { interned_string { id: 1 value: "/home/me/proj/train.py" } }
    packet { interned_string { id: 2 value: "main" } }
    packet { stack_frame { id: 1 kind: FRAME_KIND_PYTHON file_id: 1 function_id: 2 line: 31 } }
    packet { call_stack { id: 1 frame_ids: [ 1 ] truncated: true } }
    packet { call_stack { id: 2 frame_ids: [ 1 ] truncated: true outermost: 5 left_out: 3 } }
    packet { api_stack { correlation_id: 5 stack_id: 1 } }
  )pb");
  ASSERT_EQ(model.call_stacks.size(), 2u);
  EXPECT_EQ(StackLines(model, model.call_stacks[0]),
            (std::vector<std::string>{"train.py:31 main", "..."}));
  EXPECT_FALSE(CallSiteOfCall(model, 5).past_cut);
  // More outermost frames than the stack holds: read as cut at the outer end.
  EXPECT_EQ(model.call_stacks[1].outermost, 0u);
  EXPECT_EQ(StackLines(model, model.call_stacks[1]),
            (std::vector<std::string>{"train.py:31 main", "..."}));
}

// A native stack from the allocator up, innermost first: `modules[i]` and mangled `names[i]`.
TraceModel NativeStack(const std::vector<std::pair<std::string, std::string>>& frames) {
  std::string text;
  std::string ids;
  uint64_t next = 1;
  for (size_t i = 0; i < frames.size(); ++i) {
    const uint64_t file = next++, function = next++;
    text += "packet { interned_string { id: " + std::to_string(file) + " value: \"" +
            frames[i].first + "\" } }\n";
    text += "packet { interned_string { id: " + std::to_string(function) + " value: \"" +
            frames[i].second + "\" } }\n";
    text += "packet { stack_frame { id: " + std::to_string(i + 1) +
            " kind: FRAME_KIND_NATIVE file_id: " + std::to_string(file) +
            (frames[i].second.empty() ? "" : " function_id: " + std::to_string(function)) +
            " module_offset: " + std::to_string(4096 * (i + 1)) + " } }\n";
    ids += (i == 0 ? "" : ", ") + std::to_string(i + 1);
  }
  text += "packet { call_stack { id: 1 frame_ids: [ " + ids + " ] } }\n";
  text += "packet { api_stack { correlation_id: 9 stack_id: 1 } }\n";
  return LoadText(text);
}

constexpr char kTorchLib[] = "/opt/venv/lib/python3.12/site-packages/torch/lib/";
const std::string kCudart = "/usr/local/cuda/lib64/libcudart.so.13";
const std::string kLibc = "/lib/x86_64-linux-gnu/libc.so.6";
const std::string kC10 = std::string(kTorchLib) + "libc10_cuda.so";
const std::string kTorchCuda = std::string(kTorchLib) + "libtorch_cuda.so";
const std::string kTorchCpu = std::string(kTorchLib) + "libtorch_cpu.so";
const std::string kAllocator =
    "_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator6mallocEPPvimS4_";
const std::string kEmptyGeneric = "_ZN2at6detail13empty_genericEl";
const std::string kEmptyCuda = "_ZN2at6native10empty_cudaEl";
const std::string kAddmm = "_ZN2at6native19addmm_out_cuda_implERNS_6TensorERKS1_";
const std::string kMmCall = "_ZN2at4_ops2mm4callERKNS_6TensorES4_";
const std::string kMmBackward =
    "_ZN5torch8autograd9generated11MmBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE";
const std::string kEngine = "_ZN5torch8autograd6Engine11thread_mainEPv";

TEST(CallSites, AnAutogradThreadsAllocationNamesItsBackwardNode) {
  // cudaMalloc on PyTorch's autograd thread: the runtime, the caching allocator, the output's
  // allocation, the ATen kernel, the operator stub, the autograd node, the engine, libc.
  TraceModel model = NativeStack({{kCudart, "cudaMalloc"},
                                  {kC10, kAllocator},
                                  {kTorchCuda, kEmptyGeneric},
                                  {kTorchCuda, kEmptyCuda},
                                  {kTorchCuda, kAddmm},
                                  {kTorchCpu, kMmCall},
                                  {kTorchCpu, kMmBackward},
                                  {kTorchCpu, kEngine},
                                  {kLibc, "start_thread"}});
  const CallSite site = CallSiteOfCall(model, 9);
  ASSERT_NE(site.frame, nullptr);
  EXPECT_EQ(site.function,
            "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, "
            "std::allocator<at::Tensor> >&&)");
  EXPECT_EQ(site.site, "libtorch_cpu.so+0x7000");
  EXPECT_EQ(site.file, kTorchCpu);
}

TEST(CallSites, WithoutANodeTheInnermostOperationIsNamed) {
  // The same allocation cut before its node (a deep stack), or made outside autograd: the
  // ATen kernel, past the allocator and the output's allocation.
  TraceModel model = NativeStack({{kCudart, "cudaMalloc"},
                                  {kC10, kAllocator},
                                  {kTorchCuda, kEmptyGeneric},
                                  {kTorchCuda, kEmptyCuda},
                                  {kTorchCuda, ""},  // no symbol: nothing named
                                  {kTorchCuda, kAddmm},
                                  {kTorchCpu, kMmCall}});
  EXPECT_EQ(CallSiteOfCall(model, 9).function,
            "at::native::addmm_out_cuda_impl(at::Tensor&, at::Tensor const&)");
  // Only plumbing: the runtime, the allocator, the engine and libc name nothing.
  TraceModel plumbing = NativeStack({{kCudart, "cudaMalloc"},
                                     {kC10, kAllocator},
                                     {kTorchCpu, kEngine},
                                     {kLibc, "clone"}});
  EXPECT_EQ(CallSiteOfCall(plumbing, 9).Display(), kNoPythonFrames);
}

TEST(CallSites, APlainProgramsOwnFrameComesBeforeAnyLibrarys) {
  // A C++ program allocating through a library: its own function, not the library's; an
  // extension module under site-packages is a library's, not the program's.
  TraceModel model = NativeStack({{kCudart, "cudaMalloc"},
                                  {"/usr/lib/x86_64-linux-gnu/libcublasLt.so.13", "cublasLtMatmul"},
                                  {"/opt/venv/lib/python3.12/site-packages/ext/_C.so", "ext_run"},
                                  {"/opt/app/bin/solver", "_Z10solve_stepi"},
                                  {kLibc, "__libc_start_main"}});
  EXPECT_EQ(CallSiteOfCall(model, 9).Display(), "solver+0x4000 solve_step(int)");
  // No frame of the program: the library's named frame.
  TraceModel library = NativeStack({{kCudart, "cudaMalloc"},
                                    {"/usr/lib/libnccl.so.2", "ncclProxyService"},
                                    {kLibc, "start_thread"}});
  EXPECT_EQ(CallSiteOfCall(library, 9).Display(), "libnccl.so.2+0x2000 ncclProxyService");
  EXPECT_TRUE(IsAutogradNode("torch::autograd::generated::AddmmBackward0::apply(x&&)"));
  EXPECT_FALSE(IsAutogradNode("torch::autograd::Engine::thread_main(void*)"));
  EXPECT_FALSE(IsAutogradNode("Backward::helper::apply_later()"));
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
