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

}  // namespace kforge
