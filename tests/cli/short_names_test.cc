// --short-names: the shortening rule (render/short_names.h) on names with collisions,
// nesting, operators, lambdas and anonymous namespaces, and every command that prints kernel
// names taking the flag, on the traces recorded on an H200 (examples/traces/cuda13.0_sm90).
#include "analyzers/render/short_names.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_test_util.h"
#include "tests/support/trace_test_util.h"

namespace warpscope::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Recorded: cuBLAS's cutlass GEMMs of an MLP, launched with cuLaunchKernel.
constexpr char kGemmNn[] =
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"
    "(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)";
constexpr char kGemmNt[] =
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>"
    "(cutlass_80_simt_sgemm_256x128_8x4_nt_align1::Params)";
constexpr char kGemmTn[] =
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>"
    "(cutlass_80_simt_sgemm_64x64_8x5_tn_align1::Params)";
// Recorded: PyTorch's elementwise kernels, a lambda inside lambdas inside the op's function.
constexpr char kTanh[] =
    "void at::native::vectorized_elementwise_kernel<4, at::native::tanh_kernel_cuda(at::"
    "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
    "{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::tanh_kernel_cuda(at::"
    "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
    "{lambda(float)#1}, std::array<char*, 2ul>)";
constexpr char kCompareFloat[] =
    "void at::native::vectorized_elementwise_kernel<4, at::native::compare_scalar_kernel<float>"
    "(at::TensorIteratorBase&, at::native::(anonymous namespace)::OpType, float)::"
    "{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::compare_scalar_kernel<float>"
    "(at::TensorIteratorBase&, at::native::(anonymous namespace)::OpType, float)::"
    "{lambda(float)#1}, std::array<char*, 2ul>)";
constexpr char kCompareDouble[] =
    "void at::native::vectorized_elementwise_kernel<4, at::native::compare_scalar_kernel<double>"
    "(at::TensorIteratorBase&, at::native::(anonymous namespace)::OpType, double)::"
    "{lambda(double)#1}, std::array<char*, 2ul> >(int, at::native::compare_scalar_kernel<double>"
    "(at::TensorIteratorBase&, at::native::(anonymous namespace)::OpType, double)::"
    "{lambda(double)#1}, std::array<char*, 2ul>)";
// Recorded: reductions that differ only two template levels down.
constexpr char kReduceMax[] =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<double, at::native::"
    "func_wrapper_t<double, at::native::MaxNanFunctor<double> >, unsigned int, double, 4, 4> >"
    "(at::native::ReduceOp<double, at::native::func_wrapper_t<double, at::native::"
    "MaxNanFunctor<double> >, unsigned int, double, 4, 4>)";
constexpr char kReduceMin[] =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<double, at::native::"
    "func_wrapper_t<double, at::native::MinNanFunctor<double> >, unsigned int, double, 4, 4> >"
    "(at::native::ReduceOp<double, at::native::func_wrapper_t<double, at::native::"
    "MinNanFunctor<double> >, unsigned int, double, 4, 4>)";

std::string ShortOf(const KernelNames& names, std::string_view name) {
  return names.Show(name, true);
}

TEST(ShortNameFormTest, LevelsGoOneTemplateLevelDeeperEach) {
  EXPECT_EQ(ShortNameForm(kReduceMax, 0), "reduce_kernel");
  EXPECT_EQ(ShortNameForm(kReduceMax, 1), "reduce_kernel<512, 1, ReduceOp>");
  EXPECT_EQ(ShortNameForm(kReduceMax, 2),
            "reduce_kernel<512, 1, ReduceOp<double, func_wrapper_t, unsigned int, double, 4, 4>>");
  EXPECT_EQ(ShortNameForm(kReduceMax, 3),
            "reduce_kernel<512, 1, ReduceOp<double, func_wrapper_t<double, MaxNanFunctor>, "
            "unsigned int, double, 4, 4>>");
  EXPECT_EQ(ShortNameForm(kReduceMax, kQualifiedNameLevel),
            "at::native::reduce_kernel<512, 1, at::native::ReduceOp<double, at::native::"
            "func_wrapper_t<double, at::native::MaxNanFunctor<double>>, unsigned int, double, 4, "
            "4>>");
  EXPECT_EQ(ShortNameForm(kReduceMax, kWholeNameLevel), kReduceMax);
}

TEST(ShortNameFormTest, LambdasKeepTheFunctionTheyAreDeclaredIn) {
  // The enclosing op names the lambda; the dispatch lambdas and operator() between are noise.
  EXPECT_EQ(ShortNameForm(kTanh, 1),
            "vectorized_elementwise_kernel<4, tanh_kernel_cuda::{lambda(float)#1}, array>");
  EXPECT_EQ(ShortNameForm(kCompareDouble, 2),
            "vectorized_elementwise_kernel<4, compare_scalar_kernel<double>::{lambda(double)#1}, "
            "array<char*, 2ul>>");
  // A lambda's parameter types are written short too.
  EXPECT_EQ(ShortNameForm("void k<ns::f(int)::{lambda(c10::BFloat16)#1}>(int)", 1),
            "k<f::{lambda(BFloat16)#1}>");
  EXPECT_EQ(BaseFunctionName("void ns::f<g<1>>(int)::{unnamed type#1}"), "f::{unnamed type#1}");
}

TEST(ShortNameFormTest, AnonymousNamespacesAreScopesLikeOthers) {
  const char* name =
      "void (anonymous namespace)::softmax_warp_forward<float, float, float, 7, true, false>"
      "(float*, float const*, int, int, int, bool const*, int, bool)";
  EXPECT_EQ(BaseFunctionName(name), "softmax_warp_forward");
  EXPECT_EQ(ShortNameForm(name, 1), "softmax_warp_forward<float, float, float, 7, true, false>");
  EXPECT_EQ(ShortNameForm("void (anonymous namespace)::k<(anonymous namespace)::T<2> >(float*)",
                          kQualifiedNameLevel),
            "(anonymous namespace)::k<(anonymous namespace)::T<2>>");
  EXPECT_EQ(ShortNameForm("void k<(at::native::ADAM_MODE)1, -1>(int)", 1), "k<(ADAM_MODE)1, -1>");
}

TEST(ShortNameFormTest, OperatorsAreNotBrackets) {
  EXPECT_EQ(BaseFunctionName("ns::Functor<int>::operator()(int) const"), "Functor::operator()");
  EXPECT_EQ(ShortNameForm("ns::Functor<int>::operator()(int) const", 1),
            "Functor<int>::operator()");
  EXPECT_EQ(BaseFunctionName("bool ns::operator<<(std::ostream&, X<int> const&)"),
            "ns::operator<<");
  EXPECT_EQ(ShortNameForm("bool operator< <int>(A<int> const&, B const&)", 1), "operator< <int>");
  EXPECT_EQ(BaseFunctionName("bool ns::C<int>::operator>(ns::C<int> const&) const"),
            "C::operator>");
  EXPECT_EQ(BaseFunctionName("ns::C::operator unsigned int() const"), "C::operator unsigned int");
  // A word that starts with "operator" is a name like any other.
  EXPECT_EQ(BaseFunctionName("ns::Functor<int>::operator_call(int) const"), "operator_call");
  // Function types and pointers to members in parameters are read past.
  EXPECT_EQ(BaseFunctionName("void f<int>(void (*)(int), int (ns::C::*)() const)"), "f");
}

TEST(ShortNameFormTest, WhatIsNoCppNameStaysAsItIs) {
  for (const char* name :
       {"[CUDA memcpy HtoD]", "<unnamed kernel>", "cudaLaunchKernel", "_Z4gemmPf",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", "broken<(int", "f(int))"}) {
    EXPECT_EQ(ShortNameForm(name, 0), name);
    EXPECT_EQ(ShortNameForm(name, 3), name);
  }
}

TEST(KernelNamesTest, TemplateArgumentsComeBackOnlyWhereNamesCollide) {
  const KernelNames names = KernelNames::Short(
      {kGemmNn, kGemmNt, kGemmTn, kTanh, kCompareFloat, kCompareDouble, kReduceMax, kReduceMin,
       "scale_balanced(float*, int, int)", "void ns::relu<float>(float*, int)"});
  EXPECT_EQ(ShortOf(names, kGemmNn), "Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>");
  EXPECT_EQ(ShortOf(names, kGemmNt), "Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>");
  EXPECT_EQ(ShortOf(names, kGemmTn), "Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>");
  // tanh is told apart at level 1, the two compare kernels by their lambdas' parameters.
  EXPECT_EQ(ShortOf(names, kTanh),
            "vectorized_elementwise_kernel<4, tanh_kernel_cuda::{lambda(float)#1}, array>");
  EXPECT_EQ(ShortOf(names, kCompareFloat),
            "vectorized_elementwise_kernel<4, compare_scalar_kernel::{lambda(float)#1}, array>");
  EXPECT_EQ(ShortOf(names, kReduceMin),
            "reduce_kernel<512, 1, ReduceOp<double, func_wrapper_t<double, MinNanFunctor>, "
            "unsigned int, double, 4, 4>>");
  // Alone with their base name: no template arguments.
  EXPECT_EQ(ShortOf(names, "scale_balanced(float*, int, int)"), "scale_balanced");
  EXPECT_EQ(ShortOf(names, "void ns::relu<float>(float*, int)"), "relu");
}

TEST(KernelNamesTest, NamesThatOnlyScopesOrParametersTellApartGoFurther) {
  const char* a = "void one::k<int>(int)";
  const char* b = "void two::k<int>(int)";
  const char* c = "void k(float)";
  const char* d = "void k(double)";
  const KernelNames names = KernelNames::Short({a, b, c, d});
  EXPECT_EQ(ShortOf(names, a), "one::k<int>");
  EXPECT_EQ(ShortOf(names, b), "two::k<int>");
  EXPECT_EQ(ShortOf(names, c), c);  // only the parameters differ: whole
  EXPECT_EQ(ShortOf(names, d), d);
}

TEST(KernelNamesTest, NoTwoNamesShowAlike) {
  // A name written as another's short form, and duplicates in the input.
  const std::vector<std::string_view> input = {
      "k<int>",
      "void k<int>(int)",
      "void k<int>(float)",
      "k",
      "void ns::k(int)",
      "k<int>",
      kGemmNn,
      kGemmNt,
      "Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"};
  const KernelNames names = KernelNames::Short(input);
  std::set<std::string> shown;
  std::set<std::string_view> distinct(input.begin(), input.end());
  for (std::string_view name : distinct) shown.insert(names.Show(name, false));
  EXPECT_EQ(shown.size(), distinct.size());
}

TEST(KernelNamesTest, ShowsWholeByDefaultAndWhatItDoesNotKnowWhole) {
  const std::string long_name = std::string(kTanh);
  EXPECT_EQ(KernelNames().Show(long_name, false), long_name);
  EXPECT_EQ(KernelNames().Show(long_name, true).size(), 80u);  // cut in text, as before
  const KernelNames names = KernelNames::Short({kGemmNn});
  EXPECT_EQ(names.Show(kGemmNn, true), "Kernel2");
  // API calls, copies and NVTX paths are no kernel names of the set.
  EXPECT_EQ(names.Show("step_<N>/forward", false), "step_<N>/forward");
  EXPECT_EQ(names.Show("NCCL:ncclAllReduce", false), "NCCL:ncclAllReduce");
}

TEST(KernelNamesTest, ShortensNamesInsideSentences) {
  const KernelNames names = KernelNames::Short({kGemmNn, kGemmNt, "relu(float*)", "scale"});
  EXPECT_EQ(names.ShortenIn(std::string("long tail in ") + kGemmNt + "; work: " + kGemmNn +
                            ", relu(float*) and 2 more"),
            "long tail in Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>; work: "
            "Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>, relu and 2 more");
  // A kernel named like a word does not rewrite prose.
  EXPECT_EQ(names.ShortenIn("scale the batch"), "scale the batch");
  EXPECT_EQ(KernelNames().ShortenIn(kGemmNn), kGemmNn);
}

// --- Every command, on the traces recorded on an H200 ---

std::string Recorded(const std::string& name) {
  return SourceDir() + "/examples/traces/cuda13.0_sm90/" + name;
}

// The text lines of `out` that contain `what`.
std::vector<std::string> LinesWith(const std::string& out, std::string_view what) {
  std::vector<std::string> lines;
  const std::vector<std::string> all = absl::StrSplit(out, '\n');
  for (const std::string& line : all) {
    if (line.find(what) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

TEST(ShortNamesCliTest, LaunchSiteRowIsNamedByItsLargestKernel) {
  // sync_sites.py:31 launches a cutlass GEMM (97% of its time) and elementwise kernels.
  CliResult r = RunCli("summary " + Recorded("sync_sites.wst") +
                       " --report launch-sites --short-names --name-width 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> rows = LinesWith(r.out, "sync_sites.py:31");
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_THAT(rows[0], HasSubstr("gpu_work        Kernel2, vectorized_elementwise_kernel<"));
  EXPECT_THAT(rows[0], Not(HasSubstr("cutlass::")));
  // CSV: the same list, each name short.
  CliResult csv = RunCli("summary " + Recorded("sync_sites.wst") +
                         " --report launch-sites --short-names -f csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(LinesWith(csv.out, "sync_sites.py:31,gpu_work,")[0],
              HasSubstr(",\"Kernel2, vectorized_elementwise_kernel<"));
}

TEST(ShortNamesCliTest, ThreeGemmsReadAsThree) {
  CliResult r = RunCli("summary " + Recorded("ddp_late_rank/rank0.wst") +
                       " --report kernels --short-names -f json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out,
              AllOf(HasSubstr("\"name\":\"Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>\""),
                    HasSubstr("\"name\":\"Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nt_align1>\""),
                    HasSubstr("\"name\":\"Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>\"")));
  // Every row (one per whole name) keeps a name of its own.
  constexpr std::string_view kName = "\"name\":\"";
  std::vector<std::string> names;
  for (size_t at = r.out.find(kName); at != std::string::npos; at = r.out.find(kName, at)) {
    at += kName.size();
    names.push_back(r.out.substr(at, r.out.find('"', at) - at));
  }
  EXPECT_GT(names.size(), 20u);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size()) << r.out;
}

TEST(ShortNamesCliTest, AdviseNamesKernelsShortInTextCsvAndHtml) {
  const std::string trace = Recorded("sync_sites.wst");
  CliResult whole = RunCli("advise " + trace);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_THAT(whole.out, HasSubstr("work void cutlass::Kernel2<"));
  CliResult text = RunCli("advise " + trace + " --short-names");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("| work Kernel2 |"));
  EXPECT_THAT(text.out, AllOf(Not(HasSubstr("cutlass::")), Not(HasSubstr("at::native::"))));
  CliResult csv = RunCli("advise " + trace + " --short-names -f csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_THAT(csv.out, AllOf(HasSubstr(",Kernel2,"), Not(HasSubstr("at::native::"))));
  const std::string html = MakeTempDir() + "/advise.html";
  CliResult page = RunCli("advise " + trace + " --short-names --html " + html);
  ASSERT_EQ(page.exit_code, 0) << page.err;
  const std::string content = ReadFileOrDie(html);
  EXPECT_THAT(content, HasSubstr("Kernel2<br>"));  // the findings' "where"
}

TEST(ShortNamesCliTest, AJobsAdviseNamesEachRanksKernelsShort) {
  CliResult r = RunCli("advise " + Recorded("ddp_late_rank") + " --short-names -f csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(Not(HasSubstr("at::native::")), Not(HasSubstr("cutlass::"))));
  CliResult job = RunCli("job " + Recorded("ddp_late_rank") + " --short-names");
  EXPECT_EQ(job.exit_code, 0) << job.err;
}

TEST(ShortNamesCliTest, EveryCommandThatNamesKernelsTakesTheFlag) {
  const std::string pm = Recorded("pipeline_pm.wst");
  const std::string pc = Recorded("stall_kernels.wst");
  const std::string dir = MakeTempDir();
  struct Case {
    std::string args;
    std::string shows;  // a short name the output holds
  };
  const std::vector<Case> cases = {
      {"occupancy " + pm, "scale_balanced "},
      {"tail " + pm, "scale_balanced "},
      {"tail " + pm + " -f json --instances", "\"kernel\":\"scale_balanced\""},
      {"stalls " + pc, "ws_stall_barrier "},
      {"stalls " + pc + " -f csv", "\nws_stall_barrier,"},
      {"diff " + Recorded("ddp_late_rank/rank0.wst") + " " + Recorded("ddp_late_rank/rank1.wst") +
           " -n 0",
       "Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"},
      {"summary " + pm + " --report nvtx-kernels", "scale_balanced\n"},
  };
  for (const Case& c : cases) {
    CliResult r = RunCli(c.args + " --short-names");
    ASSERT_EQ(r.exit_code, 0) << c.args << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr(c.shows)) << c.args;
    EXPECT_THAT(r.out, Not(HasSubstr("(float*, int"))) << c.args;
  }
  CliResult timeline = RunCli("timeline " + Recorded("ddp_late_rank/rank0.wst") + " --svg " + dir +
                              "/t.svg --short-names");
  ASSERT_EQ(timeline.exit_code, 0) << timeline.err;
  CliResult svg = RunCli("tail " + pm + " --short-names --svg " + dir + "/tail.svg");
  ASSERT_EQ(svg.exit_code, 0) << svg.err;
  EXPECT_THAT(svg.err, HasSubstr("(reduce_imbalanced)"));
}

}  // namespace
}  // namespace warpscope::testing
