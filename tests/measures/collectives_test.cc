// One rank's collectives (analyzers/measures/collectives.h): NCCL's kernel names as H200
// traces show them, kernels tied to their NCCL calls (a group's calls to its ncclGroupEnd's
// launch), and the communicator of kernels no call is tied to.
#include "analyzers/measures/collectives.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/fixtures/synthetic_trace.h"
#include "tests/support/cli_test_util.h"

namespace warpscope {
namespace {

using fixtures::NcclCollectiveSpec;
using fixtures::SyntheticTraceBuilder;

TEST(NcclKernelNames, AsNcclNamesThem) {
  NcclKernelName n = ParseNcclKernelName(
      "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(n.op, "AllReduce");
  EXPECT_EQ(n.reduction, "Sum");
  EXPECT_EQ(n.dtype, "f32");
  EXPECT_EQ(n.algorithm, "RING");
  EXPECT_EQ(n.protocol, "LL");
  n = ParseNcclKernelName("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(n.op, "Broadcast");
  EXPECT_EQ(n.reduction, "");
  EXPECT_EQ(n.dtype, "");
  n = ParseNcclKernelName("ncclDevKernel_ReduceScatter_Sum_bf16_COLLNET_DIRECT_SIMPLE(x)");
  EXPECT_EQ(n.op, "ReduceScatter");
  EXPECT_EQ(n.dtype, "bf16");
  EXPECT_EQ(n.algorithm, "COLLNET_DIRECT");
  EXPECT_EQ(n.protocol, "SIMPLE");
  n = ParseNcclKernelName("ncclDevKernel_AllGather_NVLS_TREE_LL128(x)");
  EXPECT_EQ(n.algorithm, "NVLS_TREE");
  EXPECT_EQ(n.protocol, "LL128");
  // NCCL before 2.19.
  n = ParseNcclKernelName("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)");
  EXPECT_EQ(n.op, "AllReduce");
  EXPECT_EQ(n.reduction, "Sum");
  EXPECT_EQ(n.dtype, "float");
  EXPECT_TRUE(IsNcclKernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_FALSE(IsNcclKernel("void at::native::vectorized_elementwise_kernel<4>(int)"));
  EXPECT_FALSE(IsNcclKernel("nccl_like_user_kernel(float*)"));
}

TEST(NcclCalls, OperationAndBusBandwidth) {
  EXPECT_EQ(CollectiveOpOfCall("ncclAllReduce"), "AllReduce");
  EXPECT_EQ(CollectiveOpOfCall("ncclBcast"), "Broadcast");
  EXPECT_EQ(CollectiveOpOfCall("ncclGroupEnd"), "");
  EXPECT_EQ(CollectiveOpOfCall("ncclCommInitRankConfig"), "");
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("AllReduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("AllGather", 4), 3.0);  // payload = one rank's part
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("Broadcast", 4), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("AllReduce", 1), 1.0);
  EXPECT_TRUE(IsSymmetricCollective("AllGather"));
  EXPECT_FALSE(IsSymmetricCollective("Broadcast"));
}

class FindCollectivesTest : public ::testing::Test {
 protected:
  std::unique_ptr<SyntheticTraceBuilder> Open() {
    fixtures::SyntheticTraceOptions o;
    o.pm_interval_ns = 0;
    path_ = testing::MakeTempDir() + "/rank.wst";
    std::string error;
    auto b = SyntheticTraceBuilder::Create(path_, o, &error);
    EXPECT_NE(b, nullptr) << error;
    return b;
  }
  TraceModel Load(SyntheticTraceBuilder& b) {
    EXPECT_TRUE(b.Finish());
    absl::StatusOr<TraceModel> m = TraceModel::Load(path_);
    EXPECT_TRUE(m.ok()) << m.status();
    return std::move(*m);
  }
  std::string path_;
};

TEST_F(FindCollectivesTest, EachKernelTiedToItsCallNumberedInItsCommunicator) {
  auto b = Open();
  for (int i = 0; i < 3; ++i) {
    NcclCollectiveSpec s;
    s.bytes = 1000 * (i + 1);
    s.comm_hash = i == 1 ? 0x22 : 0x11;
    s.stream = i == 1 ? 30 : fixtures::kNcclStream;
    b->NcclCollective(s);
  }
  const TraceModel model = Load(*b);  // the instances view its strings
  const RankCollectives c = FindCollectives(model);
  ASSERT_EQ(c.instances.size(), 3u);
  EXPECT_EQ(c.tied_to_calls, 3u);
  EXPECT_EQ(c.instances[0].comm, "0x0000000000000011");
  EXPECT_EQ(c.instances[0].seq, 0u);
  EXPECT_EQ(c.instances[1].comm, "0x0000000000000022");
  EXPECT_EQ(c.instances[1].seq, 0u);
  EXPECT_EQ(c.instances[2].seq, 1u);
  EXPECT_EQ(c.instances[2].bytes, 3000u);
  EXPECT_EQ(c.instances[2].op, "AllReduce");
  EXPECT_EQ(c.instances[2].calls, 1u);
  EXPECT_EQ(c.instances[0].kernel.dtype, "f32");
}

TEST_F(FindCollectivesTest, AGroupsCallsBelongToTheLaunchOfItsEnd) {
  auto b = Open();
  TraceWriter& w = b->writer();
  const uint64_t thread = w.InternThread(0x7f3a5c1ff740ull, 4243, "python");
  auto call = [&](const char* name, uint64_t bytes, uint32_t launch, uint64_t at) {
    NcclCallRecord r{};
    r.name_id = w.InternString(name);
    r.start_ns = SyntheticTraceBuilder::ToAbsolute(at);
    r.end_ns = r.start_ns + 100;
    r.thread_id = thread;
    r.comm_hash = bytes == 0 ? 0 : 0x33;
    r.bytes = bytes;
    r.reduction_op = -1;
    r.launch_correlation_id = launch;
    r.launches = launch != 0 ? 1 : 0;
    w.Write(r);
  };
  // Two AllGathers queued in a group; ncclGroupEnd launches kernel 500.
  call("ncclAllGather", 100, 0, 1000);
  call("ncclAllGather", 200, 0, 2000);
  call("ncclGroupEnd", 0, 500, 3000);
  KernelRecord k{};
  k.name_id = w.InternString("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  k.start_ns = SyntheticTraceBuilder::ToAbsolute(5000);
  k.end_ns = k.start_ns + 3000;
  k.stream_id = 40;
  k.correlation_id = 500;
  w.Write(k);
  const TraceModel model = Load(*b);  // the instances view its strings
  const RankCollectives c = FindCollectives(model);
  ASSERT_EQ(c.instances.size(), 1u);
  EXPECT_EQ(c.instances[0].calls, 2u);
  EXPECT_EQ(c.instances[0].bytes, 300u);
  EXPECT_EQ(c.instances[0].comm_hash, 0x33u);
  EXPECT_EQ(c.instances[0].op, "AllGather");  // two calls: the kernel's name says
  EXPECT_EQ(c.instances[0].call_start_ns, 1000u);
}

TEST_F(FindCollectivesTest, KernelsWithoutCallsTakeTheirStreamsCommunicator) {
  auto b = Open();
  NcclCollectiveSpec tied;
  tied.comm_hash = 0x44;
  b->NcclCollective(tied);
  NcclCollectiveSpec untied = tied;
  untied.with_call = false;
  b->NcclCollective(untied);
  untied.stream = 50;  // a stream with no call at all
  b->NcclCollective(untied);
  b->NcclCollective(untied);
  const TraceModel model = Load(*b);  // the instances view its strings
  const RankCollectives c = FindCollectives(model);
  ASSERT_EQ(c.instances.size(), 4u);
  EXPECT_EQ(c.comm_from_stream, 1u);
  EXPECT_EQ(c.keyed_by_stream, 2u);
  EXPECT_EQ(c.instances[1].comm, "0x0000000000000044");
  EXPECT_EQ(c.instances[1].seq, 1u);
  EXPECT_EQ(c.instances[2].comm, "stream#0");
  EXPECT_EQ(c.instances[3].seq, 1u);
  EXPECT_EQ(c.instances[3].bytes, 0u);
}

}  // namespace
}  // namespace warpscope
