// The external merge sort (analyzers/analyses/export/spill_sort.h) against std::stable_sort:
// records come back in key order, equal keys in the order added, whether they stay in memory,
// spill to a few runs, or spill to so many runs that runs are merged level by level; and the
// files held open stay bounded however many runs were spilled.
#include "analyzers/analyses/export/spill_sort.h"

#include <dirent.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace warpscope {
namespace {

struct Record {
  SpillSorter::Key key;
  std::string bytes;
};

size_t OpenFiles() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d) != nullptr) ++n;
    ::closedir(d);
  }
  return n;
}

// `n` records with keys from a small range (many equal keys), each naming its place.
std::vector<Record> Records(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Record> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back({{rng() % 50, rng() % 3, 0, 0}, "record " + std::to_string(i)});
  }
  return out;
}

// Sorts `records` through a sorter of `budget` bytes; returns what came back and the most
// files open at once while adding.
std::vector<Record> Sorted(const std::vector<Record>& records, size_t budget, size_t* most_open) {
  SpillSorter sorter(budget);
  const size_t before = OpenFiles();
  *most_open = 0;
  for (const Record& r : records) {
    EXPECT_TRUE(sorter.Add(r.key, r.bytes).ok());
    *most_open = std::max(*most_open, OpenFiles() - before);
  }
  std::vector<Record> out;
  EXPECT_TRUE(sorter
                  .Drain([&](const SpillSorter::Key& key, std::string_view bytes) {
                    out.push_back({key, std::string(bytes)});
                  })
                  .ok());
  EXPECT_EQ(OpenFiles(), before);  // every run closed
  return out;
}

void ExpectStablySorted(const std::vector<Record>& records, const std::vector<Record>& got) {
  std::vector<Record> want = records;
  std::stable_sort(want.begin(), want.end(),
                   [](const Record& a, const Record& b) { return a.key < b.key; });
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].key, want[i].key) << i;
    ASSERT_EQ(got[i].bytes, want[i].bytes) << i;
  }
}

TEST(SpillSorterTest, InMemoryAndAFewRuns) {
  const std::vector<Record> records = Records(2000, 1);
  size_t most_open = 0;
  ExpectStablySorted(records, Sorted(records, 1 << 20, &most_open));  // no run
  EXPECT_EQ(most_open, 0u);
  ExpectStablySorted(records, Sorted(records, 16 << 10, &most_open));  // a few runs
  EXPECT_GE(most_open, 2u);
  EXPECT_LT(most_open, SpillSorter::kFanIn);
}

TEST(SpillSorterTest, ManyRunsAreMergedLevelByLevel) {
  // About 40 records a run: some 2,500 runs, more than a process may hold open by default.
  const std::vector<Record> records = Records(100000, 2);
  size_t most_open = 0;
  ExpectStablySorted(records, Sorted(records, 2048, &most_open));
  // Fewer than kFanIn runs a level, three levels here (2,500 runs < 32^3).
  EXPECT_LE(most_open, 3 * SpillSorter::kFanIn);
}

}  // namespace
}  // namespace warpscope
