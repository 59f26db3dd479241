#include "kforge/agent/kernelbench_import.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "kforge/benchmarks/task.hpp"
#include "kforge/common/beneath.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;

std::optional<GenerationName> parse_generation_name(const std::string& file_name) {
  // scripts/generate_samples.py of KernelBench: f"level_{level}_problem_{id}_sample_{sample}_kernel.py".
  static const std::regex kName(R"(level_(\d{1,4})_problem_(\d{1,6})_sample_(\d{1,6})_kernel\.py)");
  std::smatch m;
  if (!std::regex_match(file_name, m, kName)) return std::nullopt;
  return GenerationName{std::stoi(m[1].str()), std::stoi(m[2].str()), std::stoi(m[3].str())};
}

namespace {

ImportedKernel failed(std::string why) {
  ImportedKernel k;
  k.reason = std::move(why);
  return k;
}

/// KernelBench task ids are level<L>/<P>_<Name> (benchmarks/task.cpp): (L, P) -> id.
std::map<std::pair<int, int>, std::string> problems_of(const Suite& s) {
  static const std::regex kId(R"(level(\d+)/(\d+)_.*)");
  std::map<std::pair<int, int>, std::string> m;
  for (const auto& t : s.tasks) {
    std::smatch g;
    if (std::regex_match(t.id, g, kId)) m[{std::stoi(g[1].str()), std::stoi(g[2].str())}] = t.id;
  }
  return m;
}

}  // namespace

ImportedKernel import_load_inline(const fs::path& generation, const std::string& python,
                                  const fs::path& script) {
  const fs::path dir = kforge_home() / "backends" / "kernelbench";
  const fs::path conv = script.empty() ? dir / "load_inline_import.py" : script;
  const fs::path shim = dir / "torch_shim.cuh";
  if (!fs::is_regular_file(conv) || !fs::is_regular_file(shim))
    return failed("the converter is missing (" + conv.string() + ", " + shim.string() + "): set KFORGE_HOME");
  sandbox::Spec spec;
  // -I: isolated mode; the script reads the generation with ast.parse and never runs it.
  spec.argv = {python, "-I", "-B", conv.string(), fs::absolute(generation).string(), shim.string()};
  spec.env_allow = {"PATH", "LANG", "LC_ALL"};
  spec.limits.wall = std::chrono::seconds(20);
  spec.limits.cpu_seconds = 20;
  spec.limits.max_file_bytes = 1 << 20;
  spec.limits.output_cap_bytes = 16 << 20;
  const auto res = sandbox::run(spec);
  if (res.status != sandbox::Status::exited || res.exit_code != 0 || res.out_truncated)
    return failed("the converter failed (" + std::string(sandbox::to_string(res.status)) + ", exit " +
                  std::to_string(res.exit_code) + "): " + truncate_middle(trim(res.err + res.error), 600));
  const auto j = nlohmann::json::parse(res.out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return failed("the converter's reply is not JSON");
  ImportedKernel k;
  k.ok = j.value("ok", false);
  k.kernel = j.value("kernel", "");
  k.reason = j.value("reason", "");
  k.line = j.value("line", 0);
  if (j.contains("notes") && j["notes"].is_array())
    for (const auto& n : j["notes"]) k.notes.push_back(n.get<std::string>());
  return k;
}

namespace {
int import_all(const ImportCommand& cmd, const Suite& suite);
}  // namespace

int run_import_kernelbench(const ImportCommand& cmd) {
  Suite suite;
  try {
    suite = load_suite(resolve_suite(cmd.suite));
  } catch (const std::exception& e) {
    std::cerr << "kforge import-kernelbench: " << e.what() << "\n";
    return 2;
  }
  if (!fs::is_directory(cmd.generations)) {
    std::cerr << "kforge import-kernelbench: " << cmd.generations.string() << ": not a directory\n";
    return 2;
  }
  try {
    return import_all(cmd, suite);
  } catch (const std::runtime_error& e) {  // a link planted in --out, a folder that cannot be made
    std::cerr << "kforge import-kernelbench: " << e.what() << "\n";
    return 2;
  }
}

namespace {

int import_all(const ImportCommand& cmd, const Suite& suite) {
  std::vector<std::pair<GenerationName, fs::path>> files;
  for (const auto& e : fs::directory_iterator(cmd.generations))
    if (auto g = parse_generation_name(e.path().filename().string()); g && e.is_regular_file())
      files.emplace_back(*g, e.path());
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (files.empty()) {
    std::cerr << "kforge import-kernelbench: no level_<L>_problem_<P>_sample_<S>_kernel.py under "
              << cmd.generations.string() << "\n";
    return 2;
  }
  const auto problems = problems_of(suite);
  nlohmann::json not_imported = nlohmann::json::object();
  int imported = 0;
  for (const auto& [g, file] : files) {
    ImportedKernel k;
    auto it = problems.find({g.level, g.problem});
    if (it == problems.end())
      k = failed("suite " + suite.name + " has no task level" + std::to_string(g.level) + "/" +
                 std::to_string(g.problem) + "_*");
    else
      k = import_load_inline(file);
    if (!k.ok) {
      // A kernel an earlier import wrote for this generation is stale now: it must not be judged.
      // Through beneath.hpp: never outside --out, never through a link planted inside it.
      if (it != problems.end() && fs::is_directory(cmd.out))
        remove_file_beneath(cmd.out, fs::path(it->second) / std::to_string(g.sample) / "kernel.cu");
      std::cerr << "kforge import-kernelbench: " << file.string() << ": not imported: " << k.reason
                << (k.line > 0 ? " (line " + std::to_string(k.line) + ")" : "") << "\n";
      not_imported[file.filename().string()] = {{"reason", k.reason}, {"line", k.line}};
      continue;
    }
    fs::create_directories(cmd.out);
    write_file_beneath(cmd.out, fs::path(it->second) / std::to_string(g.sample) / "kernel.cu", k.kernel);
    for (const auto& n : k.notes)
      std::cerr << "kforge import-kernelbench: " << file.string() << ": " << n << "\n";
    ++imported;
  }
  fs::create_directories(cmd.out);
  write_file_beneath(cmd.out, "not_imported.json", dump_json(not_imported, 2) + "\n");
  std::printf("imported %d of %zu generation(s) into %s", imported, files.size(), cmd.out.string().c_str());
  if (!not_imported.empty())
    std::printf("; %zu not imported (listed in %s)", not_imported.size(),
                (cmd.out / "not_imported.json").string().c_str());
  std::printf("\nnext: kforge eval --suite %s --backend cuda --kernels %s --out RUN_DIR\n", cmd.suite.c_str(),
              cmd.out.string().c_str());
  return 0;
}

}  // namespace

}  // namespace kforge::agent
