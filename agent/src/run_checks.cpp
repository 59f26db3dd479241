#include "kforge/agent/run_checks.hpp"

#include <set>

#include "kforge/agent/run_options.hpp"
#include "kforge/benchmarks/shapes.hpp"
#include "kforge/common/task_id.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
std::vector<std::string> ids_of(const Suite& suite) {
  std::vector<std::string> ids;
  for (const auto& t : suite.tasks) ids.push_back(t.id);
  return ids;
}
std::string with_closest(const std::string& name, const std::vector<std::string>& ids) {
  const std::string c = closest_name(name, ids);
  return name + (c.empty() ? "" : " (closest: " + c + ")");
}
}  // namespace

std::vector<std::string> unknown_task_ids(const std::vector<std::string>& ids, const Suite& suite) {
  std::vector<std::string> out;
  const auto known = ids_of(suite);
  for (const auto& id : ids)
    if (!suite.find(id)) out.push_back(with_closest(id, known));
  return out;
}

std::optional<std::string> profile_problem(const std::vector<const Task*>& tasks, const std::string& profile,
                                           const std::string& suite_name) {
  if (profile.empty() || profile == "default") return std::nullopt;
  for (const Task* t : tasks)
    if (has_profile(*t, profile)) return std::nullopt;
  return "--profile " + profile + ": no selected task of suite " + suite_name +
         " defines it (profile names are case-sensitive; small and ci are derived for tasks whose "
         "get_inputs() shapes kforge understands; `kforge suites --suite " +
         suite_name + " --profile ci` lists them)";
}

std::vector<std::string> unmatched_kernel_folders(const fs::path& kernels, const Suite& suite,
                                                  const std::string& source_file) {
  std::set<std::string> bad;
  const auto known = ids_of(suite);
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(kernels, fs::directory_options::none, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 6) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename() != source_file || !it->is_regular_file(ec)) continue;
    fs::path rel = it->path().parent_path().lexically_relative(kernels);
    if (rel.empty() || rel == ".") continue;  // a kernel at the top: no task folder at all
    // A folder with its own reference.py is a standalone exemplar (prompts/exemplars/<b>/add,
    // the `add` retrieval strategy's), not a kernel meant for a task of the suite.
    if (fs::exists(it->path().parent_path() / "reference.py", ec)) continue;
    // The task's own folder, or one below it (a sample's; find_kernel_samples names a folder
    // that is not a sample).
    bool in_task = false;
    for (fs::path p = rel; !in_task && !p.empty(); p = p.parent_path())
      in_task = suite.find(p.generic_string());
    if (in_task) continue;
    const std::string last = rel.filename().string();
    const bool numbered = !last.empty() && last.find_first_not_of("0123456789") == std::string::npos;
    const fs::path task = numbered && rel.has_parent_path() ? rel.parent_path() : rel;
    bad.insert(with_closest(task.generic_string(), known));
  }
  return {bad.begin(), bad.end()};
}

std::optional<std::string> eval_resume_problem(const json& recorded, const json& config) {
  const std::string command = recorded.is_object() ? recorded.value("command", "") : "";
  if (command != "eval")
    return "it is a `kforge " + (command.empty() ? std::string("?") : command) +
           "` directory, not an eval's: eval never writes into it (choose a new --out)";
  const json was = recorded.contains("config") ? recorded["config"] : json::object();
  const json rules = run_option_rules();  // eval's options are the table's (add_eval_options)
  for (const auto& [key, v] : config.items()) {
    if (!rules.contains(key) || rules[key] != "same") continue;  // free: device, devices, kernels
    json before = was.contains(key) ? was[key] : json(nullptr);
    if (key == "profile" && before == "") before = "default";
    if (before.is_null() || before == v) continue;
    std::string flag = "--" + key;
    for (const auto& o : run_options())
      if (o.key == key) flag = o.flag[0] == '!' ? o.flag.substr(1) : o.flag;
    return flag + ": this eval says " + v.dump() + ", the directory's results were judged with " +
           before.dump() + " (config." + key +
           "); it changes results, so they cannot be mixed (use the same value, or a new --out)";
  }
  return std::nullopt;
}

}  // namespace kforge::agent
