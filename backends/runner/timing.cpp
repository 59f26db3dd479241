// Summary statistics for kforge-runner's timings.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "runner.hpp"

namespace kforge::runner {

Stats stats_of(std::vector<double> ms) {
  Stats s;
  s.reps = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {  // linear interpolation between closest ranks
    double r = p * static_cast<double>(ms.size() - 1);
    auto lo = static_cast<std::size_t>(std::floor(r));
    auto hi = std::min(lo + 1, ms.size() - 1);
    return ms[lo] + (ms[hi] - ms[lo]) * (r - static_cast<double>(lo));
  };
  s.median = pct(0.5);
  s.p10 = pct(0.1);
  s.p90 = pct(0.9);
  s.min = ms.front();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  double var = 0;
  for (double v : ms) var += (v - s.mean) * (v - s.mean);
  var /= static_cast<double>(ms.size());
  s.cv = s.mean > 0 ? std::sqrt(var) / s.mean : 0;
  return s;
}

}  // namespace kforge::runner
