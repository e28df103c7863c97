// Durations of one name (a kernel, an API call, a copy kind) folded one at a time, so that a
// summary over a long trace holds a fixed amount per name instead of every duration. Count,
// total, extremes and mean are exact. The median and the standard deviation are exact while
// the name has at most kExactValues instances (the values are kept); past that the median
// comes from a log-bucket histogram (DDSketch's mapping) and is within kRelativeError of a
// true middle value, and the deviation from Welford's running sums (exact but for rounding).
// Sketches merge (the combined view over the traces of a job).
#ifndef WARPSCOPE_ANALYZERS_MEASURES_DURATION_SKETCH_H_
#define WARPSCOPE_ANALYZERS_MEASURES_DURATION_SKETCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace warpscope {

class DurationSketch {
 public:
  static constexpr size_t kExactValues = 256;
  static constexpr double kRelativeError = 0.005;

  void Add(uint64_t ns);
  void Merge(const DurationSketch& other);

  uint64_t count() const { return count_; }
  uint64_t total_ns() const { return total_; }
  uint64_t min_ns() const { return min_; }
  uint64_t max_ns() const { return max_; }
  // Whether the median and deviation below are exact (the values are all kept).
  bool exact() const { return count_ <= kExactValues; }
  // The middle value; of an even count the mean of the two middle ones. 0 when empty.
  double Median() const;
  // Sample standard deviation (n - 1); 0 for fewer than 2 values.
  double SampleStddev() const;

 private:
  void Spill();  // moves the kept values into the histogram
  void CountBucket(int32_t bucket, uint64_t n);
  uint64_t ValueAtRank(uint64_t rank) const;  // from the histogram, rank 0-based

  uint64_t count_ = 0;
  uint64_t total_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  double mean_ = 0;  // Welford's running mean and sum of squared deviations
  double m2_ = 0;
  std::vector<uint64_t> values_;  // while exact()
  // Past kExactValues: instances per bucket; bucket i holds (g^(i-1), g^i] (i >= 0), counted
  // in buckets_[i - first_bucket_] over the range of buckets seen (a few hundred for a name
  // whose durations span 10x), and 0 in zeros_.
  std::vector<uint64_t> buckets_;
  int32_t first_bucket_ = 0;
  uint64_t zeros_ = 0;
};

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_DURATION_SKETCH_H_
