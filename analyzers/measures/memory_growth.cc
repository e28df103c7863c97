// Memory growth over progress (memory_growth.h).
#include "analyzers/measures/memory_growth.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace warpscope {
namespace {

double Median(std::vector<double>& v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid))) / 2;
  }
  return m;
}

// Summed absolute deviation of "flat (the median) before `onset`, a Theil-Sen line from it".
double HingeDeviation(const std::vector<double>& v, size_t onset) {
  double deviation = 0;
  if (onset > 0) {
    std::vector<double> flat(v.begin(), v.begin() + static_cast<ptrdiff_t>(onset));
    const double level = Median(flat);
    for (size_t i = 0; i < onset; ++i) deviation += std::abs(v[i] - level);
  }
  std::vector<double> slopes;
  for (size_t i = onset; i < v.size(); ++i) {
    for (size_t j = i + 1; j < v.size(); ++j) {
      slopes.push_back((v[j] - v[i]) / static_cast<double>(j - i));
    }
  }
  const double slope = Median(slopes);
  std::vector<double> intercepts;
  for (size_t i = onset; i < v.size(); ++i) {
    intercepts.push_back(v[i] - slope * static_cast<double>(i - onset));
  }
  const double intercept = Median(intercepts);
  for (size_t i = onset; i < v.size(); ++i) {
    deviation += std::abs(v[i] - intercept - slope * static_cast<double>(i - onset));
  }
  return deviation;
}

}  // namespace

GrowthJudgement JudgeGrowth(const std::vector<uint64_t>& values) {
  GrowthJudgement g;
  if (values.size() < 3) return g;
  // Thin long series evenly: point i of the thinned series is input point i * stride.
  const size_t stride = (values.size() + kGrowthPoints - 1) / kGrowthPoints;
  std::vector<double> v;
  std::vector<uint64_t> thinned;
  for (size_t i = 0; i < values.size(); i += stride) {
    v.push_back(static_cast<double>(values[i]));
    thinned.push_back(values[i]);
  }
  if (v.size() < 3) return g;
  size_t onset = 0;
  const double from_first = HingeDeviation(v, 0);
  double best = from_first;
  for (size_t k = 1; k + 3 <= v.size(); ++k) {
    const double d = HingeDeviation(v, k);
    if (d < best) best = d, onset = k;
  }
  if (onset > 0 && best > kOnsetBetterFit * from_first) onset = 0;
  const std::vector<uint64_t> rise(thinned.begin() + static_cast<ptrdiff_t>(onset), thinned.end());
  g.slope = TheilSenSlope(rise);
  if (g.slope) {
    const double s = static_cast<double>(stride);
    g.slope->per_step /= s, g.slope->low /= s, g.slope->high /= s;
  }
  g.onset = onset * stride;
  if (rise.back() > rise.front()) g.gained = rise.back() - rise.front();
  g.leak = g.slope && g.slope->low > 0 && g.gained >= kLeakMinimumBytes;
  return g;
}

std::vector<uint64_t> KernelProgressInstants(std::vector<uint64_t> ends, size_t count,
                                             double skip_share, double* per_point) {
  std::sort(ends.begin(), ends.end());
  const size_t skip = static_cast<size_t>(skip_share * static_cast<double>(ends.size()));
  const size_t left = ends.size() - std::min(skip, ends.size());
  const size_t points = std::min(count, left / 3);
  std::vector<uint64_t> out;
  if (points < kMinimumProgressPoints) return out;
  const double step = static_cast<double>(left - 1) / static_cast<double>(points - 1);
  for (size_t i = 0; i < points; ++i) {
    out.push_back(ends[skip + static_cast<size_t>(std::llround(step * static_cast<double>(i)))]);
  }
  if (per_point != nullptr) *per_point = step;
  return out;
}

void KernelEndSample::Add(uint64_t end_ns) {
  if (seen_++ % stride_ != 0) return;
  ends_.push_back(end_ns);
  if (ends_.size() < 2 * cap_) return;
  size_t kept = 0;
  for (size_t i = 0; i < ends_.size(); i += 2) ends_[kept++] = ends_[i];
  ends_.resize(kept);
  stride_ *= 2;
}

}  // namespace warpscope
