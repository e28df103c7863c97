// The NCCL call tracker without a GPU: payloads decoded by NCCL's schemas (and refused when
// their layout does not match), calls recorded from NCCL's domain only, the kernel launched
// inside a call tied to it, a group's calls, nesting, capture windows and unreadable memory.
#include "collectors/nccl/nccl_calls.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace warpscope {
namespace {

constexpr uint64_t kStatic = uint64_t{1} << 24;
constexpr uint64_t kAllReduceSchema = kStatic + 5;
constexpr uint64_t kBroadcastSchema = kStatic + 6;
constexpr uint64_t kSendSchema = kStatic + 9;
constexpr uint64_t kCommDestroySchema = kStatic + 2;

// NCCL's payload structs (nvtx_payload_schemas.h), as the compiler lays them out.
struct AllReducePayload {
  uint64_t comm;
  size_t bytes;
  int op;
};
struct CommRanksPayload {
  uint64_t comm;
  int nranks, rank, dev;
};

struct Written {
  NcclCallRecord record;
  std::string name;
  uint32_t os_tid;
};

class NcclCallsTest : public ::testing::Test {
 protected:
  NcclCallsTest()
      : tracker_([this](const NcclCallRecord& r, std::string_view name,
                        uint32_t tid) { written_.push_back({r, std::string(name), tid}); },
                 [this] { return now_ += 100; }) {
    tracker_.OnDomainCreated(kNccl, "NCCL");
    tracker_.OnDomainCreated(kOther, "my_library");
    tracker_.OnStringRegistered(kNccl, kAllReduceName, "ncclAllReduce");
    tracker_.OnStringRegistered(kNccl, kGroupEndName, "ncclGroupEnd");
    tracker_.OnStringRegistered(kOther, kAllReduceName, "not NCCL's");
  }

  // A push as NCCL makes it: a registered name and one extended payload.
  void Push(const void* name, uint64_t schema, const void* payload, size_t size,
            const void* domain = kNccl) {
    data_ = NvtxPayloadData{schema, size, payload};
    tracker_.OnPush(domain, 77, nullptr, name, payload != nullptr ? kNvtxPayloadTypeExt : 0,
                    payload != nullptr ? reinterpret_cast<uint64_t>(&data_) : 0);
  }

  static inline const void* const kNccl = reinterpret_cast<const void*>(0x1000);
  static inline const void* const kOther = reinterpret_cast<const void*>(0x2000);
  static inline const void* const kAllReduceName = reinterpret_cast<const void*>(0x3000);
  static inline const void* const kGroupEndName = reinterpret_cast<const void*>(0x4000);
  uint64_t now_ = 0;
  NvtxPayloadData data_{};
  std::vector<Written> written_;
  NcclCallTracker tracker_;
};

TEST_F(NcclCallsTest, DecodesEachLayoutBySchemaAndSize) {
  const AllReducePayload all_reduce{0xc2e5cdcd6a46e35aull, 26214400, 4};
  NcclPayloadFields f;
  ASSERT_TRUE(DecodeNcclPayload(kAllReduceSchema, &all_reduce, sizeof all_reduce, &f));
  EXPECT_EQ(f.function, "ncclAllReduce");
  EXPECT_EQ(f.comm_hash, 0xc2e5cdcd6a46e35aull);
  EXPECT_EQ(f.bytes, 26214400u);
  EXPECT_EQ(f.reduction_op, 4);
  EXPECT_EQ(f.root, -1);
  EXPECT_EQ(f.peer, -1);

  const AllReducePayload broadcast{7, 432, 3};  // {comm, bytes, root}
  ASSERT_TRUE(DecodeNcclPayload(kBroadcastSchema, &broadcast, sizeof broadcast, &f));
  EXPECT_EQ(f.function, "ncclBroadcast");
  EXPECT_EQ(f.root, 3);
  EXPECT_EQ(f.reduction_op, -1);
  ASSERT_TRUE(DecodeNcclPayload(kSendSchema, &broadcast, sizeof broadcast, &f));
  EXPECT_EQ(f.peer, 3);

  const CommRanksPayload destroy{9, 4, 2, 2};
  ASSERT_TRUE(DecodeNcclPayload(kCommDestroySchema, &destroy, sizeof destroy, &f));
  EXPECT_EQ(f.function, "ncclCommDestroy");
  EXPECT_EQ(f.comm_size, 4);
  EXPECT_EQ(f.comm_rank, 2);
}

TEST_F(NcclCallsTest, RefusesUnknownSchemasAndSizes) {
  const AllReducePayload p{1, 2, 3};
  NcclPayloadFields f;
  EXPECT_FALSE(DecodeNcclPayload(0, &p, sizeof p, &f));             // seen on the H200
  EXPECT_FALSE(DecodeNcclPayload(kStatic + 999, &p, sizeof p, &f));  // a later NCCL's schema
  EXPECT_FALSE(DecodeNcclPayload(kAllReduceSchema, &p, 16, &f));     // another layout
  EXPECT_FALSE(DecodeNcclPayload(kAllReduceSchema, nullptr, sizeof p, &f));
  EXPECT_EQ(f.comm_hash, 0u);
}

TEST_F(NcclCallsTest, RecordsACallWithItsPayloadAndLaunch) {
  tracker_.SetRecording(true);
  const AllReducePayload p{0xabcdef, 1 << 20, 0};
  Push(kAllReduceName, kAllReduceSchema, &p, sizeof p);
  tracker_.OnLaunch(4077);
  tracker_.OnLaunch(4078);  // a second launch in the same call: counted, the first kept
  tracker_.OnPop(kNccl, 77);
  ASSERT_EQ(written_.size(), 1u);
  const NcclCallRecord& r = written_[0].record;
  EXPECT_EQ(written_[0].name, "ncclAllReduce");
  EXPECT_EQ(written_[0].os_tid, 77u);
  EXPECT_EQ(r.comm_hash, 0xabcdefu);
  EXPECT_EQ(r.bytes, 1u << 20);
  EXPECT_EQ(r.reduction_op, 0);
  EXPECT_EQ(r.launch_correlation_id, 4077u);
  EXPECT_EQ(r.launches, 2u);
  EXPECT_FALSE(r.payload_unreadable);
  EXPECT_LT(r.start_ns, r.end_ns);
}

TEST_F(NcclCallsTest, OtherDomainsAndLaunchesOutsideCallsLeaveNoRecord) {
  tracker_.SetRecording(true);
  tracker_.OnLaunch(1);  // no NCCL call open
  const AllReducePayload p{1, 2, 0};
  Push(kAllReduceName, kAllReduceSchema, &p, sizeof p, kOther);
  tracker_.OnLaunch(2);
  tracker_.OnPop(kOther, 77);
  tracker_.OnPop(kNccl, 77);  // a pop without its push (pushed before recording started)
  EXPECT_TRUE(written_.empty());
}

TEST_F(NcclCallsTest, AGroupsCallsLaunchNothingAndItsEndLaunches) {
  tracker_.SetRecording(true);
  const AllReducePayload a{11, 100, 0}, b{11, 200, 0};
  Push(kAllReduceName, kAllReduceSchema, &a, sizeof a);
  tracker_.OnPop(kNccl, 77);
  Push(kAllReduceName, kAllReduceSchema, &b, sizeof b);
  tracker_.OnPop(kNccl, 77);
  Push(kGroupEndName, 0, nullptr, 0);
  tracker_.OnLaunch(900);
  tracker_.OnPop(kNccl, 77);
  ASSERT_EQ(written_.size(), 3u);
  EXPECT_EQ(written_[0].record.launches, 0u);
  EXPECT_EQ(written_[1].record.bytes, 200u);
  EXPECT_EQ(written_[2].name, "ncclGroupEnd");
  EXPECT_EQ(written_[2].record.launch_correlation_id, 900u);
  EXPECT_EQ(written_[2].record.comm_hash, 0u);  // no payload
}

TEST_F(NcclCallsTest, NothingIsWrittenOutsideCaptureWindows) {
  tracker_.SetRecording(false);
  Push(kGroupEndName, 0, nullptr, 0);
  tracker_.OnPop(kNccl, 77);
  EXPECT_TRUE(written_.empty());
}

TEST_F(NcclCallsTest, AnUnreadablePayloadIsCountedNotFollowed) {
  tracker_.SetRecording(true);
  // A page that cannot be read: the tracker must not fault on it.
  const long page = sysconf(_SC_PAGESIZE);
  void* hole = mmap(nullptr, static_cast<size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  Push(kAllReduceName, kAllReduceSchema, hole, sizeof(AllReducePayload));
  tracker_.OnPop(kNccl, 77);
  // The payload record itself unreadable.
  tracker_.OnPush(kNccl, 77, nullptr, kAllReduceName, kNvtxPayloadTypeExt,
                  reinterpret_cast<uint64_t>(hole));
  tracker_.OnPop(kNccl, 77);
  munmap(hole, static_cast<size_t>(page));
  ASSERT_EQ(written_.size(), 2u);
  EXPECT_TRUE(written_[0].record.payload_unreadable);
  EXPECT_EQ(written_[0].record.comm_hash, 0u);
  EXPECT_EQ(written_[0].name, "ncclAllReduce");
  EXPECT_TRUE(written_[1].record.payload_unreadable);
  EXPECT_EQ(tracker_.unreadable_payloads(), 2u);
}

TEST_F(NcclCallsTest, CallsNestedDeeperThanFollowedAreDroppedAndCounted) {
  tracker_.SetRecording(true);
  for (int i = 0; i < 10; ++i) Push(kGroupEndName, 0, nullptr, 0);
  for (int i = 0; i < 10; ++i) tracker_.OnPop(kNccl, 77);
  EXPECT_EQ(written_.size(), 8u);
  EXPECT_EQ(tracker_.too_deep(), 2u);
  // The stack is balanced again: a new call is recorded.
  Push(kGroupEndName, 0, nullptr, 0);
  tracker_.OnPop(kNccl, 77);
  EXPECT_EQ(written_.size(), 9u);
}

TEST_F(NcclCallsTest, TheNameComesFromThePayloadWhenNotRegistered) {
  tracker_.SetRecording(true);
  const AllReducePayload p{1, 2, 0};
  Push(reinterpret_cast<const void*>(0x9999), kAllReduceSchema, &p, sizeof p);
  tracker_.OnPop(kNccl, 77);
  ASSERT_EQ(written_.size(), 1u);
  EXPECT_EQ(written_[0].name, "ncclAllReduce");
}

}  // namespace
}  // namespace warpscope
