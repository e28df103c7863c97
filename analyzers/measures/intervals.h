// Confidence intervals for the figures that rest on samples (stall shares, achieved
// occupancy, tails): one definition, so that every report states its uncertainty alike.
#ifndef WARPSCOPE_ANALYZERS_MEASURES_INTERVALS_H_
#define WARPSCOPE_ANALYZERS_MEASURES_INTERVALS_H_

#include <algorithm>
#include <cmath>

namespace warpscope {

// z of a two-sided 95% interval.
inline constexpr double kZ95 = 1.959963984540054;

struct Interval {
  double low = 0;
  double high = 0;
  double half_width() const { return (high - low) / 2; }
  bool Contains(double x) const { return low <= x && x <= high; }
};

// The 95% Wilson score interval of a proportion `p` observed in `n` independent draws (n may
// be fractional: an effective sample size). Unlike p +- z*sqrt(p(1-p)/n) it stays inside
// [0, 1] and is not empty at p = 0 or 1, which matters for shares near either end. n <= 0
// gives [0, 1].
inline Interval WilsonInterval(double p, double n) {
  if (!(n > 0)) return {0, 1};
  p = std::clamp(p, 0.0, 1.0);
  const double z2 = kZ95 * kZ95;
  const double denom = 1 + z2 / n;
  const double center = (p + z2 / (2 * n)) / denom;
  const double half = kZ95 * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom;
  // At p = 0 or 1 the bound on that side is p itself (rounding would move it).
  return {p == 0 ? 0.0 : std::max(0.0, center - half), p == 1 ? 1.0 : std::min(1.0, center + half)};
}

}  // namespace warpscope

#endif  // WARPSCOPE_ANALYZERS_MEASURES_INTERVALS_H_
