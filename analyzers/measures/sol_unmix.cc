// Least-squares unmixing of shared PM samples per kernel group (sol_unmix.h).
#include "analyzers/measures/sol_unmix.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "analyzers/model/trace_limits.h"

namespace warpscope {
namespace {

constexpr int kMaxSweeps = 300;
constexpr double kConverged = 1e-4;  // percent points: the largest step of a sweep

using Row = std::vector<std::pair<uint32_t, double>>;  // (group, overlap / sample length)

uint64_t PairKey(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }

// One block's share of the normal equations: Σ f fᵀ (each unordered pair once, a <= b) and,
// per unit, Σ f · y.
struct Block {
  std::unordered_map<uint64_t, double> gram;
  std::vector<std::vector<double>> rhs;  // [unit][group]
};

// Each sample's groups and overlap fractions, merged per group.
std::vector<Row> SampleRows(std::span<const uint32_t> group, const SolSamples& samples,
                            const PmAttribution& attribution) {
  std::vector<Row> rows(samples.times.samples.size());
  for (size_t k = 0; k < attribution.kernel_samples.size() && k < group.size(); ++k) {
    for (const SampleOverlap& o : attribution.kernel_samples[k]) {
      const ActiveWarpSample& s = samples.times.samples[o.sample];
      const double length = static_cast<double>(s.end_ns - s.start_ns);
      if (length > 0) rows[o.sample].emplace_back(group[k], static_cast<double>(o.overlap_ns) / length);
    }
  }
  for (Row& r : rows) {
    std::sort(r.begin(), r.end());
    Row merged;
    for (const auto& [g, f] : r) {
      if (!merged.empty() && merged.back().first == g) {
        merged.back().second += f;
      } else {
        merged.emplace_back(g, f);
      }
    }
    r = std::move(merged);
  }
  return rows;
}

// A sample enters the equations when it holds every unit some set carries (one layout).
bool Complete(const SolSamples& samples, size_t s) {
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (samples.has_unit[u] && std::isnan(samples.pct[s][u])) return false;
  }
  return true;
}

using Gram = std::unordered_map<uint64_t, double>;

Gram SumOf(const std::vector<Block>& blocks) {
  Gram sum;
  for (const Block& b : blocks) {
    for (const auto& [key, v] : b.gram) sum[key] += v;
  }
  return sum;
}

// Symmetric adjacency of `gram` less `minus` (nullptr: nothing), diagonal included.
std::vector<Row> Adjacency(const Gram& gram, const Gram* minus, size_t groups) {
  std::vector<Row> adj(groups);
  for (const auto& [key, total] : gram) {
    double v = total;
    if (minus != nullptr) {
      if (auto it = minus->find(key); it != minus->end()) v -= it->second;
    }
    const auto a = static_cast<uint32_t>(key >> 32), c = static_cast<uint32_t>(key);
    if (!(v > 0)) continue;
    adj[a].emplace_back(c, v);
    if (a != c) adj[c].emplace_back(a, v);
  }
  return adj;
}

double Diagonal(const Row& row, uint32_t j) {
  for (const auto& [i, v] : row) {
    if (i == j) return v;
  }
  return 0;
}

// min ½ rᵀGr − bᵀr + ½ Σ λ_j (r_j − m_j)² over r in [0, 100]ⁿ, by coordinate descent from `r`.
void Solve(const std::vector<Row>& adj, const std::vector<double>& rhs,
           const std::vector<double>& pull, const std::vector<double>& prior,
           std::vector<double>& r) {
  const size_t n = adj.size();
  std::vector<double> diag(n), gr(n, 0.0);
  for (uint32_t j = 0; j < n; ++j) {
    diag[j] = Diagonal(adj[j], j);
    for (const auto& [i, v] : adj[j]) gr[j] += v * r[i];
  }
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    double largest = 0;
    for (uint32_t j = 0; j < n; ++j) {
      if (!(diag[j] > 0)) continue;
      const double others = gr[j] - diag[j] * r[j];
      const double next = std::clamp(
          (rhs[j] - others + pull[j] * prior[j]) / (diag[j] + pull[j]), 0.0, 100.0);
      const double step = next - r[j];
      if (step == 0) continue;
      for (const auto& [i, v] : adj[j]) gr[i] += v * step;
      r[j] = next;
      largest = std::max(largest, std::abs(step));
    }
    if (largest < kConverged) break;
  }
}

// For each group, the share of its own signal that the other groups' cannot reproduce:
// 1 / (G_jj · (G + Λ)⁻¹_jj), 1 for a group alone in its samples, near 0 for one that always
// runs beside the same others in the same proportions. Dense Cholesky: empty above kMaxDense.
constexpr size_t kMaxDense = 2000;
std::vector<double> Separability(const std::vector<Row>& adj, const std::vector<double>& pull) {
  const size_t n = adj.size();
  if (n > kMaxDense) return {};
  std::vector<double> a(n * n, 0.0);
  for (size_t j = 0; j < n; ++j) {
    for (const auto& [i, v] : adj[j]) a[j * n + i] = v;
    a[j * n + j] += pull[j] > 0 ? pull[j] : 1.0;  // a group in no sample: any positive pivot
  }
  for (size_t j = 0; j < n; ++j) {  // a = L Lᵀ, L in the lower triangle
    double d = a[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) return {};
    a[j * n + j] = std::sqrt(d);
    for (size_t i = j + 1; i < n; ++i) {
      double v = a[i * n + j];
      for (size_t k = 0; k < j; ++k) v -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = v / a[j * n + j];
    }
  }
  // (L Lᵀ)⁻¹_jj = Σ_i (L⁻¹)_ij², column j of L⁻¹ by forward substitution.
  std::vector<double> out(n, 0.0), x(n);
  for (size_t j = 0; j < n; ++j) {
    std::fill(x.begin(), x.end(), 0.0);
    double inv = 0;
    for (size_t i = j; i < n; ++i) {
      double v = i == j ? 1.0 : 0.0;
      for (size_t k = j; k < i; ++k) v -= a[i * n + k] * x[k];
      x[i] = v / a[i * n + i];
      inv += x[i] * x[i];
    }
    const double g = Diagonal(adj[j], static_cast<uint32_t>(j));
    out[j] = g > 0 && inv > 0 ? std::min(1.0, 1.0 / (g * inv)) : 0.0;
  }
  return out;
}

std::vector<Block> Blocks(const std::vector<Row>& rows, const SolSamples& samples,
                          size_t groups, std::vector<uint32_t>* sample_counts) {
  std::vector<Block> blocks(kSolUnmixBlocks);
  for (Block& b : blocks) b.rhs.assign(kSolUnitCount, std::vector<double>(groups, 0.0));
  std::vector<bool> taken(rows.size());
  size_t used = 0;
  for (size_t s = 0; s < rows.size(); ++s) {
    taken[s] = !rows[s].empty() && Complete(samples, s);
    used += taken[s];
  }
  size_t nth = 0;
  for (size_t s = 0; s < rows.size(); ++s) {
    if (!taken[s]) continue;
    Block& b = blocks[nth++ * kSolUnmixBlocks / std::max<size_t>(used, 1)];
    for (size_t x = 0; x < rows[s].size(); ++x) {
      const auto [gx, fx] = rows[s][x];
      ++(*sample_counts)[gx];
      for (size_t y = x; y < rows[s].size(); ++y) {
        b.gram[PairKey(gx, rows[s][y].first)] += fx * rows[s][y].second;
      }
      for (size_t u = 0; u < kSolUnitCount; ++u) {
        if (samples.has_unit[u]) b.rhs[u][gx] += fx * samples.pct[s][u];
      }
    }
  }
  return blocks;
}

}  // namespace

std::vector<SolUnmixed> UnmixSolFigures(std::span<const uint32_t> group, size_t groups,
                                        const SolSamples& samples,
                                        const PmAttribution& attribution,
                                        std::span<const SolUnitValues> prior) {
  std::vector<SolUnmixed> out(groups);
  for (SolUnmixed& o : out) o.value = o.low = o.high = NoSolValues();
  if (groups == 0 || !samples.any_unit()) return out;
  std::vector<uint32_t> counts(groups, 0);
  const std::vector<Block> blocks =
      Blocks(SampleRows(group, samples, attribution), samples, groups, &counts);
  const Gram gram = SumOf(blocks);
  const std::vector<Row> full = Adjacency(gram, nullptr, groups);
  std::vector<double> pull(groups);
  for (uint32_t j = 0; j < groups; ++j) pull[j] = kSolUnmixPull * Diagonal(full[j], j);
  const std::vector<double> separable = Separability(full, pull);
  for (uint32_t j = 0; j < groups; ++j) {
    out[j].samples = counts[j];
    out[j].separable = separable.empty() ? 0.0 : separable[j];
    out[j].solved = pull[j] > 0 && out[j].separable >= kSolUnmixSeparable;
  }
  std::vector<std::vector<Row>> left_out(kSolUnmixBlocks);
  for (size_t b = 0; b < kSolUnmixBlocks; ++b) {
    left_out[b] = Adjacency(gram, &blocks[b].gram, groups);
  }
  for (size_t u = 0; u < kSolUnitCount; ++u) {
    if (!samples.has_unit[u]) continue;
    std::vector<double> m(groups, 0.0), rhs(groups, 0.0);
    for (uint32_t j = 0; j < groups; ++j) {
      if (j < prior.size() && !std::isnan(prior[j][u])) m[j] = std::clamp(prior[j][u], 0.0, 100.0);
      for (const Block& b : blocks) rhs[j] += b.rhs[u][j];
    }
    std::vector<double> r = m;
    Solve(full, rhs, pull, m, r);
    // Delete-one-block jackknife: var = (B - 1) / B · Σ (θ_b - θ̄)².
    std::vector<double> sum(groups, 0.0), sum_sq(groups, 0.0);
    for (size_t b = 0; b < kSolUnmixBlocks; ++b) {
      std::vector<double> rb_rhs = rhs;
      for (uint32_t j = 0; j < groups; ++j) rb_rhs[j] -= blocks[b].rhs[u][j];
      std::vector<double> rb = r;
      Solve(left_out[b], rb_rhs, pull, m, rb);
      for (uint32_t j = 0; j < groups; ++j) {
        sum[j] += rb[j];
        sum_sq[j] += rb[j] * rb[j];
      }
    }
    const double nb = static_cast<double>(kSolUnmixBlocks);
    for (uint32_t j = 0; j < groups; ++j) {
      if (!out[j].solved) continue;
      const double mean = sum[j] / nb;
      const double spread = std::max(0.0, sum_sq[j] / nb - mean * mean) * (nb - 1);
      const double half = 1.96 * std::sqrt(spread);
      out[j].value[u] = r[j];
      out[j].low[u] = std::max(0.0, r[j] - half);
      out[j].high[u] = std::min(100.0, r[j] + half);
    }
  }
  return out;
}

}  // namespace warpscope
