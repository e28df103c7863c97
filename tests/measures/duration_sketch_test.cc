// The duration sketch (duration_sketch.h) against exact figures: exact up to its limit, the
// median within the stated relative error past it, merging as adding, and the streamed
// interval union (interval_union.h) against the sorted one.
#include "analyzers/measures/duration_sketch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "analyzers/model/interval_union_stream.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

double ExactMedian(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? static_cast<double>(v[mid])
                           : (static_cast<double>(v[mid - 1]) + v[mid]) / 2;
}

double ExactStddev(const std::vector<uint64_t>& v) {
  double mean = 0;
  for (uint64_t x : v) mean += static_cast<double>(x);
  mean /= static_cast<double>(v.size());
  double sq = 0;
  for (uint64_t x : v) sq += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}

std::vector<uint64_t> LogNormal(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dist(9.0, 1.5);  // around 8 us, wide
  std::vector<uint64_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(static_cast<uint64_t>(dist(rng)));
  return v;
}

TEST(DurationSketchTest, ExactUpToTheLimit) {
  const std::vector<uint64_t> values = LogNormal(DurationSketch::kExactValues, 1);
  DurationSketch s;
  for (uint64_t v : values) s.Add(v);
  ASSERT_TRUE(s.exact());
  EXPECT_EQ(s.Median(), ExactMedian(values));
  EXPECT_NEAR(s.SampleStddev(), ExactStddev(values), ExactStddev(values) * 1e-12);
  EXPECT_EQ(s.min_ns(), *std::min_element(values.begin(), values.end()));
  EXPECT_EQ(s.max_ns(), *std::max_element(values.begin(), values.end()));
}

TEST(DurationSketchTest, MedianWithinItsErrorPastTheLimit) {
  for (size_t n : {DurationSketch::kExactValues + 1, size_t{10001}, size_t{100000}}) {
    SCOPED_TRACE(n);
    const std::vector<uint64_t> values = LogNormal(n, static_cast<uint32_t>(n));
    DurationSketch s;
    uint64_t total = 0;
    for (uint64_t v : values) s.Add(v), total += v;
    ASSERT_FALSE(s.exact());
    EXPECT_EQ(s.count(), n);
    EXPECT_EQ(s.total_ns(), total);
    // The middle value (n is odd) is known within the error, plus rounding to a whole ns.
    const double exact = ExactMedian(values);
    EXPECT_LE(std::abs(s.Median() - exact), exact * DurationSketch::kRelativeError + 1);
    EXPECT_NEAR(s.SampleStddev(), ExactStddev(values), ExactStddev(values) * 1e-9);
  }
}

TEST(DurationSketchTest, MergeIsAddingAll) {
  const std::vector<uint64_t> a = LogNormal(200, 7), b = LogNormal(5000, 8);
  DurationSketch sa, sb, all;
  for (uint64_t v : a) sa.Add(v), all.Add(v);
  for (uint64_t v : b) sb.Add(v), all.Add(v);
  sa.Merge(sb);
  EXPECT_EQ(sa.count(), all.count());
  EXPECT_EQ(sa.total_ns(), all.total_ns());
  EXPECT_EQ(sa.min_ns(), all.min_ns());
  EXPECT_EQ(sa.max_ns(), all.max_ns());
  EXPECT_EQ(sa.Median(), all.Median());  // the same buckets either way
  EXPECT_NEAR(sa.SampleStddev(), all.SampleStddev(), all.SampleStddev() * 1e-9);
  // Two small ones stay exact.
  DurationSketch x, y;
  x.Add(10), x.Add(30), y.Add(20), y.Add(0);
  x.Merge(y);
  EXPECT_TRUE(x.exact());
  EXPECT_EQ(x.Median(), 15);
  EXPECT_EQ(x.min_ns(), 0u);
}

// Buckets are counted over the range seen: values that arrive from the top down, zeros, and a
// merge of a sketch whose values all lie below the other's must give the same median as
// values added in any order.
TEST(DurationSketchTest, RangeGrowsDownwardAndMergesBelow) {
  std::vector<uint64_t> high, low;
  for (uint64_t v = 2'000'000; v > 1'000'000; v -= 1'000) high.push_back(v);  // descending
  for (uint64_t v = 0; v < 600; ++v) low.push_back(v % 7 == 0 ? 0 : 100 + v);  // zeros too
  DurationSketch sh, sl, all;
  for (uint64_t v : high) sh.Add(v), all.Add(v);
  for (uint64_t v : low) sl.Add(v), all.Add(v);
  DurationSketch merged = sh;
  merged.Merge(sl);
  std::vector<uint64_t> every = high;
  every.insert(every.end(), low.begin(), low.end());
  const double exact = ExactMedian(every);
  EXPECT_EQ(merged.count(), every.size());
  EXPECT_EQ(merged.Median(), all.Median());
  EXPECT_LE(std::abs(all.Median() - exact), exact * DurationSketch::kRelativeError + 1);
  // Mostly zeros: the median is 0, within the exact extremes.
  DurationSketch zeros;
  for (int i = 0; i < 1000; ++i) zeros.Add(i % 10 == 0 ? 5000 : 0);
  EXPECT_EQ(zeros.Median(), 0);
  EXPECT_LE(std::abs(sh.Median() - ExactMedian(high)),
            ExactMedian(high) * DurationSketch::kRelativeError + 1);
}

TEST(IntervalUnionStreamTest, MatchesTheSortedUnionWithinItsWindow) {
  // Kernels with gaps, handed over shuffled within blocks of 50 (less than the window).
  std::mt19937_64 rng(3);
  std::vector<TimeInterval> all;
  uint64_t t = 1000;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t length = 100 + rng() % 900;
    all.push_back({t, t + length});
    t += length / 2 + rng() % 1000;  // overlaps some, leaves a gap after others
  }
  std::vector<TimeInterval> shuffled = all;
  for (size_t i = 0; i + 50 <= shuffled.size(); i += 50) {
    std::shuffle(shuffled.begin() + i, shuffled.begin() + i + 50, rng);
  }
  IntervalUnionStream stream(/*window=*/64);
  for (const TimeInterval& i : shuffled) stream.Add(i);
  const UnionTotals got = stream.Finish();
  const IntervalUnion want = UnionOf(all);
  EXPECT_EQ(got.begin_ns, want.begin_ns);
  EXPECT_EQ(got.end_ns, want.end_ns);
  EXPECT_EQ(got.covered_ns, want.covered_ns);
  EXPECT_EQ(got.gaps, want.gaps.size());
  uint64_t longest = 0;
  for (const IntervalGap& g : want.gaps) longest = std::max(longest, g.length());
  EXPECT_EQ(got.longest_gap_ns, longest);
  EXPECT_EQ(got.late, 0u);
  EXPECT_EQ(got.intervals, all.size());
}

TEST(IntervalUnionStreamTest, CountsWhatComesTooLate) {
  IntervalUnionStream stream(/*window=*/2);
  for (uint64_t i = 10; i < 20; ++i) stream.Add({i * 100, i * 100 + 50});
  stream.Add({0, 10});  // far before what was folded
  const UnionTotals got = stream.Finish();
  EXPECT_EQ(got.late, 1u);
  EXPECT_EQ(got.begin_ns, 0u);
  EXPECT_EQ(got.intervals, 11u);
}

}  // namespace
}  // namespace warpscope
