// A duration sketch: exact values up to a limit, then a log-bucket histogram (see the header).
#include "analyzers/measures/duration_sketch.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace warpscope {
namespace {

// DDSketch's mapping: bucket i covers (g^(i-1), g^i] with g = (1 + a) / (1 - a); the estimate
// 2 g^i / (g + 1) is within a (relative) of every value in it.
const double kGamma = (1 + DurationSketch::kRelativeError) / (1 - DurationSketch::kRelativeError);
const double kLogGamma = std::log(kGamma);
constexpr int32_t kZeroBucket = INT32_MIN;

int32_t BucketOf(uint64_t ns) {
  if (ns == 0) return kZeroBucket;
  return static_cast<int32_t>(std::ceil(std::log(static_cast<double>(ns)) / kLogGamma));
}

double EstimateOf(int32_t bucket) {
  if (bucket == kZeroBucket) return 0;
  return 2 * std::exp(bucket * kLogGamma) / (kGamma + 1);
}

}  // namespace

void DurationSketch::Add(uint64_t ns) {
  min_ = count_ == 0 ? ns : std::min(min_, ns);
  max_ = std::max(max_, ns);
  total_ += ns;
  ++count_;
  const double delta = static_cast<double>(ns) - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (static_cast<double>(ns) - mean_);
  if (count_ <= kExactValues) {
    values_.push_back(ns);
    return;
  }
  if (!values_.empty()) Spill();
  CountBucket(BucketOf(ns), 1);
}

void DurationSketch::Merge(const DurationSketch& other) {
  if (other.count_ == 0) return;
  if (count_ + other.count_ <= kExactValues) {
    for (uint64_t v : other.values_) Add(v);
    return;
  }
  // Chan et al.'s combination of two running means and sums of squares.
  const double n_a = static_cast<double>(count_), n_b = static_cast<double>(other.count_);
  const double delta = other.mean_ - mean_;
  mean_ += delta * n_b / (n_a + n_b);
  m2_ += other.m2_ + delta * delta * n_a * n_b / (n_a + n_b);
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  total_ += other.total_;
  count_ += other.count_;
  Spill();
  for (uint64_t v : other.values_) CountBucket(BucketOf(v), 1);
  zeros_ += other.zeros_;
  for (size_t i = 0; i < other.buckets_.size(); ++i) {
    if (other.buckets_[i] != 0) {
      CountBucket(other.first_bucket_ + static_cast<int32_t>(i), other.buckets_[i]);
    }
  }
}

void DurationSketch::Spill() {
  for (uint64_t v : values_) CountBucket(BucketOf(v), 1);
  values_.clear();
  values_.shrink_to_fit();
}

void DurationSketch::CountBucket(int32_t bucket, uint64_t n) {
  if (bucket == kZeroBucket) {
    zeros_ += n;
    return;
  }
  if (buckets_.empty()) {
    first_bucket_ = bucket;
    buckets_.assign(1, 0);
  } else if (bucket < first_bucket_) {
    buckets_.insert(buckets_.begin(), static_cast<size_t>(first_bucket_ - bucket), 0);
    first_bucket_ = bucket;
  } else if (static_cast<size_t>(bucket - first_bucket_) >= buckets_.size()) {
    buckets_.resize(static_cast<size_t>(bucket - first_bucket_) + 1, 0);
  }
  buckets_[static_cast<size_t>(bucket - first_bucket_)] += n;
}

uint64_t DurationSketch::ValueAtRank(uint64_t rank) const {
  // Never outside the exact extremes.
  if (rank < zeros_) return std::clamp<uint64_t>(0, min_, max_);
  uint64_t seen = zeros_;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (rank < seen) {
      const double estimate = EstimateOf(first_bucket_ + static_cast<int32_t>(i));
      return std::clamp(static_cast<uint64_t>(std::llround(estimate)), min_, max_);
    }
  }
  return max_;
}

double DurationSketch::Median() const {
  if (count_ == 0) return 0;
  const uint64_t mid = count_ / 2;
  if (exact()) {
    std::vector<uint64_t> sorted = values_;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(mid),
                     sorted.end());
    const double upper = static_cast<double>(sorted[mid]);
    if (count_ % 2 == 1) return upper;
    const double lower = static_cast<double>(
        *std::max_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(mid)));
    return (lower + upper) / 2;
  }
  const double upper = static_cast<double>(ValueAtRank(mid));
  if (count_ % 2 == 1) return upper;
  return (static_cast<double>(ValueAtRank(mid - 1)) + upper) / 2;
}

double DurationSketch::SampleStddev() const {
  if (count_ < 2) return 0;
  if (!exact()) return std::sqrt(m2_ / static_cast<double>(count_ - 1));
  // As a two-pass sum over the values, so that small tables read as they always have.
  std::vector<uint64_t> sorted = values_;  // summed in order, as they always were
  std::sort(sorted.begin(), sorted.end());
  const double avg = static_cast<double>(total_) / static_cast<double>(count_);
  double sum_sq = 0;
  for (uint64_t v : sorted) {
    const double diff = static_cast<double>(v) - avg;
    sum_sq += diff * diff;
  }
  return std::sqrt(sum_sq / static_cast<double>(count_ - 1));
}

}  // namespace warpscope
