#include "kforge/agent/task_command.hpp"

#include <iostream>
#include <nlohmann/json.hpp>

#include "kforge/agent/attempt.hpp"
#include "kforge/agent/hardware.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/agent/judged_checks.hpp"
#include "kforge/agent/prompt_context.hpp"
#include "kforge/agent/run_exit.hpp"
#include "kforge/agent/runners.hpp"
#include "kforge/common/util.hpp"

namespace kforge::agent {

prompts::PromptInput first_turn_prompt_input(const Task& task, const backends::TaskRef& ref,
                                             const backends::LoadResult& load,
                                             const backends::Backend& backend, int trials,
                                             std::vector<std::string> allow_precision) {
  prompts::PromptInput in;
  in.backend = backend.name();
  in.backend_prompts = backend.prompts_dir();
  in.language = backend.prompt_language();
  in.device_type = backend.device_type();
  in.task_id = task.id;
  in.category = task.category;
  in.reference = ref.source;
  in.module_mode = ref.module_mode;
  in.checks = judged_checks(task, load.outputs, trials,
                            precision_contract(backend.name(), backend.device_type(), allow_precision, task));
  for (const auto& t : load.inputs) in.tensors.push_back({"input", t.name, t.kind, t.dtype, t.shape});
  for (const auto& t : load.outputs) in.tensors.push_back({"output", t.name, t.kind, t.dtype, t.shape});
  in.tolerances = output_tolerances(task, in.tensors);
  return in;
}

namespace {

/// Task ids containing `id`'s last path component, for the "unknown task" message.
std::string near_ids(const Suite& s, const std::string& id) {
  const std::string leaf = id.substr(id.rfind('/') == std::string::npos ? 0 : id.rfind('/') + 1);
  std::string out;
  int n = 0;
  for (const auto& t : s.tasks)
    if (t.id.find(leaf) != std::string::npos && n++ < 8) out += (out.empty() ? "" : ", ") + t.id;
  return out;
}

}  // namespace

int run_task_command(const TaskCommand& cmd) {
  const backends::Backend* backend = backends::find_backend(cmd.backend);
  if (!backend) {
    std::cerr << "kforge task: --backend " << cmd.backend << ": unknown backend\n";
    return 2;
  }
  Suite suite;
  try {
    suite = load_suite(resolve_suite(cmd.suite));
  } catch (const std::exception& e) {
    std::cerr << "kforge task: " << e.what() << "\n";
    return 2;
  }
  const Task* task = suite.find(cmd.id);
  if (!task) {
    const std::string near = near_ids(suite, cmd.id);
    std::cerr << "kforge task: suite " << suite.name << " has no task '" << cmd.id << "'"
              << (near.empty() ? std::string() : " (did you mean: " + near + "?)")
              << "; `kforge suites --suite " << cmd.suite << "` lists them\n";
    return 2;
  }
  backends::TaskRef ref;
  try {
    ref = task_ref(*task, cmd.profile);
  } catch (const std::exception& e) {
    std::cerr << "kforge task: --profile " << cmd.profile << ": " << e.what() << "\n";
    return 2;
  }
  backends::RunnerConfig rc;
  rc.device = cmd.device.empty() ? backend->default_device() : cmd.device;
  backends::RunnerClient runner(rc);
  const auto hello = runner.hello();
  if (!hello) {
    print_runner_not_started("kforge task", runner);
    return 3;
  }
  // TritonBench: no model to load, the test block is the check.
  const auto lr = load_task(runner, ref);
  if (!lr) {
    std::cerr << "kforge task: " << task->id << ": " << unusable_reason(lr.failure()) << "\n";
    return kExitInfraError;
  }
  prompts::PromptInput in =
      first_turn_prompt_input(*task, ref, lr.value(), *backend, cmd.trials, cmd.allow_precision);
  in.device = rc.device;
  in.hardware = device_facts(nlohmann::json::parse(hello.value(), nullptr, false), rc.device);
  std::cout << prompts::render_prompt(in).markdown();
  return 0;
}

}  // namespace kforge::agent
