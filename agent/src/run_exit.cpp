#include "kforge/agent/run_exit.hpp"

#include <nlohmann/json.hpp>
#include <ostream>

#include "kforge/common/json_text.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/runs/run_status.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;

void write_unusable(const fs::path& run_dir, const std::map<std::string, std::string>& unusable) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [task, why] : unusable) j[task] = why;
  write_file(run_dir / "unusable.json", dump_json(j, 2) + "\n");
}

int finished_run_exit_status(const fs::path& run_dir, std::ostream& err) {
  const RunStatus st = run_status(load_attempts(run_dir).records);
  if (st.paused_episodes > 0) {
    err << "kforge run: " << st.paused_episodes << " episode(s) paused at an llm_error; --resume "
        << run_dir.string() << " asks those turns again. Last LLM error (" << st.last_llm_error_task
        << "): " << truncate_middle(st.last_llm_error, 600) << "\n";
    return kExitLlmError;
  }
  if (st.scored == 0) {
    err << "kforge run: nothing was scored (" << st.records
        << " record(s), none judged: see infra_error in attempts.jsonl and unusable.json)\n";
    return kExitInfraError;
  }
  return 0;
}

}  // namespace kforge::agent
