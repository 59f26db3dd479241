#include "kforge/runs/run_status.hpp"

#include <map>
#include <utility>

namespace kforge {

RunStatus run_status(const std::vector<AttemptRecord>& records) {
  RunStatus st;
  std::map<std::pair<std::string, int>, Outcome> last;  // (task, sample) -> last outcome
  for (const AttemptRecord& r : records) {
    ++st.records;
    st.scored += is_model_outcome(r.outcome);
    last[{r.task, r.sample}] = r.outcome;
    if (r.outcome == Outcome::llm_error) {
      st.last_llm_error = r.message;
      st.last_llm_error_task = r.task;
    }
  }
  for (const auto& [episode, outcome] : last) st.paused_episodes += outcome == Outcome::llm_error;
  return st;
}

void record_invocation(RunDir& run, double wall_s, bool complete) {
  nlohmann::json m = run.manifest();
  const double before = m.contains("wall_s") && m["wall_s"].is_number() ? m["wall_s"].get<double>() : 0.0;
  m["wall_s"] = before + (wall_s > 0 ? wall_s : 0.0);
  m["complete"] = complete;
  run.update_manifest(m);
}

}  // namespace kforge
