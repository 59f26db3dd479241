#include "kforge/agent/reference_times.hpp"

#include <algorithm>
#include <tuple>

namespace kforge::agent {

namespace {
std::pair<double, int> median_of(std::vector<double> v) {
  if (v.empty()) return {0, 0};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, static_cast<int>(n)};
}
}  // namespace

void ReferenceTimes::note(AttemptRecord& rec) {
  std::lock_guard<std::mutex> lock(mu_);
  if (rec.passed() && rec.t_reference_ms > 0 && rec.timing_unstable.empty())
    stable_ms_[rec.task].push_back(rec.t_reference_ms);
  auto it = stable_ms_.find(rec.task);
  if (it == stable_ms_.end()) return;
  std::tie(rec.t_reference_run_ms, rec.reference_run_timings) = median_of(it->second);
}

std::pair<double, int> ReferenceTimes::estimate(const std::string& task) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = stable_ms_.find(task);
  return it == stable_ms_.end() ? std::pair<double, int>{0, 0} : median_of(it->second);
}

}  // namespace kforge::agent
