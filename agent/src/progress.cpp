#include "kforge/agent/progress.hpp"

#include <cmath>
#include <cstdio>

namespace kforge::agent {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  const long s = std::lround(seconds);
  char b[32];
  if (s < 60)
    std::snprintf(b, sizeof b, "%lds", s);
  else if (s < 3600)
    std::snprintf(b, sizeof b, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(b, sizeof b, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  return b;
}

std::string progress_bar(const RunTally& t, int active, double elapsed_s, bool finished, int width) {
  if (finished) active = t.abandoned + t.stopped;  // what a stop left unfinished
  const bool cut = finished && (t.interrupted || t.llm_down || t.infra_down);
  const int done = t.episodes - active;
  const int filled = t.episodes > 0 ? width * done / t.episodes : width;
  std::string bar = "[kforge run] [" + std::string(static_cast<std::size_t>(filled), '#') +
                    std::string(static_cast<std::size_t>(width - filled), '-') + "] ";
  bar += std::to_string(done) + "/" + std::to_string(t.episodes) +
         (cut ? " episodes finished  " : " episodes  ") + std::to_string(t.attempts) + " attempts  " +
         std::to_string(t.passes) + " passes";
  if (t.llm_errors) bar += "  " + std::to_string(t.llm_errors) + " llm errors";
  if (t.infra_errors) bar += "  " + std::to_string(t.infra_errors) + " infra errors";
  if (cut)
    return bar + (t.interrupted ? "  interrupted after " : "  stopped after ") + format_duration(elapsed_s);
  if (finished) return bar + "  in " + format_duration(elapsed_s);
  const double eta = done > 0 ? elapsed_s / done * active : -1;
  return bar + "  ETA " + (active == 0 ? std::string("0s") : format_duration(eta));
}

std::string attempt_line(const AttemptRecord& rec) {
  std::string s = "[kforge run] " + rec.task + " sample " + std::to_string(rec.sample) + " turn " +
                  std::to_string(rec.turn) + ": " + std::string(to_string(rec.outcome));
  if (!rec.sub_kind.empty()) s += "/" + rec.sub_kind;
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", rec.speedup);
  return s + " speedup " + (rec.has_speedup() ? std::string(b) : std::string("-"));
}

}  // namespace kforge::agent
