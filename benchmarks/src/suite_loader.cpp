// The suite loaders of task.hpp (load_suite and the layouts it recognises, builtin_suite_dirs,
// resolve_suite) and apply_profile: the task model's upper half, above the operator tasks
// (operators.hpp), the derived shape profiles (shapes.hpp) and TritonBench (tritonbench.hpp),
// which all build on the task model itself (task.cpp).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>

#include "kforge/benchmarks/operators.hpp"
#include "kforge/benchmarks/shapes.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/task_id.hpp"
#include "kforge/common/util.hpp"
#include "tritonbench.hpp"

namespace fs = std::filesystem;

namespace kforge {

namespace {
bool is_known_category(const std::string& c) {
  const auto& cats = known_categories();
  return std::find(cats.begin(), cats.end(), c) != cats.end();
}
}  // namespace

std::optional<std::string> apply_profile(const Task& task, const std::string& profile) {
  if (profile.empty() || profile == "default") return task.source;
  if (auto base = unseen_base(profile)) {  // "B+unseen": the unseen rule over profile B (shapes.hpp)
    auto src = apply_profile(task, *base);
    if (!src) return std::nullopt;
    auto sp = unseen_profile(*src);
    if (!sp) return std::nullopt;
    return std::move(sp->source);
  }
  auto it = task.profiles.find(profile);
  if (it == task.profiles.end()) {
    // A profile the task does not define: the derived one (shapes.hpp), where there is a rule for it.
    auto sp = scale_profile(task.source, profile);
    if (!sp) return std::nullopt;
    return std::move(sp->source);
  }
  auto lines = split_lines(task.source);
  std::set<std::string> done;
  int last_const_line = 0;
  for (const auto& c : task.constants) {
    last_const_line = std::max(last_const_line, c.line);
    auto o = it->second.find(c.name);
    if (o == it->second.end() || done.count(c.name)) continue;
    lines[c.line - 1] = c.name + " = " + o->second + "  # profile " + profile;
    done.insert(c.name);
  }
  std::string extra;
  for (const auto& [name, expr] : it->second)
    if (!done.count(name)) extra += name + " = " + expr + "  # profile " + profile + "\n";
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    out += '\n';
    if (static_cast<int>(i + 1) == last_const_line) out += extra, extra.clear();
  }
  return extra + out;  // extra is non-empty only when the file has no constants at all
}

namespace {

std::string json_type_name(const nlohmann::json& j) {
  return j.type_name();
}

// Reads one suite.json entry; returns the error instead of throwing.
std::optional<LoadError> read_manifest_entry(const nlohmann::json& e, std::size_t idx,
                                             const fs::path& manifest, const fs::path& root, Task& out) {
  const std::string where = "tasks[" + std::to_string(idx) + "]";
  auto err = [&](const std::string& field, const std::string& msg) {
    return LoadError{manifest, where + "." + field, msg};
  };
  if (!e.is_object()) return LoadError{manifest, where, "must be an object, got " + json_type_name(e)};
  for (const char* req : {"id", "file", "category"})
    if (!e.contains(req) || !e[req].is_string())
      return err(req, "required string field is missing or not a string");
  if (!e.contains("difficulty") || !e["difficulty"].is_number_integer())
    return err("difficulty", "required integer field (1..5) is missing or not an integer");
  int diff = e["difficulty"].get<int>();
  if (diff < 1 || diff > 5) return err("difficulty", "must be 1..5, got " + std::to_string(diff));
  std::string cat = e["category"].get<std::string>();
  if (!is_known_category(cat))
    return err("category", "unknown category '" + cat + "' (expected one of the 14 of MultiKernelBench)");
  fs::path file = root / e["file"].get<std::string>();
  auto parsed = parse_task_file(file, e["id"].get<std::string>());
  if (parsed.error) return parsed.error;
  Task t = std::move(*parsed.task);
  t.category = cat;
  t.difficulty = diff;
  t.description = e.value("description", "");
  if (e.contains("module_mode")) {
    if (!e["module_mode"].is_string() ||
        (e["module_mode"].get<std::string>() != "train" && e["module_mode"].get<std::string>() != "eval"))
      return err("module_mode", "must be \"train\" or \"eval\"");
    t.module_mode = e["module_mode"].get<std::string>();
  }
  if (e.contains("allow_precision")) {
    const auto& a = e["allow_precision"];
    if (!a.is_array()) return err("allow_precision", "must be an array of \"tf32\", \"fp16\", \"bf16\"");
    for (const auto& k : a) {
      if (!k.is_string() || (k != "tf32" && k != "fp16" && k != "bf16"))
        return err("allow_precision", "must be an array of \"tf32\", \"fp16\", \"bf16\"");
      t.allow_precision.push_back(k.get<std::string>());
    }
  }
  if (e.contains("allow_ops")) {
    const auto& a = e["allow_ops"];
    if (!a.is_array()) return err("allow_ops", "must be an array of ATen op names such as \"mm\"");
    for (const auto& k : a) {
      if (!k.is_string()) return err("allow_ops", "must be an array of ATen op names such as \"mm\"");
      t.allow_ops.push_back(k.get<std::string>());
    }
  }
  for (const char* f : {"flops", "bytes"}) {
    if (!e.contains(f)) continue;
    if (!e[f].is_string()) return err(f, "must be a Python expression string");
    (std::string(f) == "flops" ? t.flops : t.bytes) = e[f].get<std::string>();
  }
  if (e.contains("tolerance")) {
    if (!e["tolerance"].is_object()) return err("tolerance", "must be an object {dtype: {atol, rtol}}");
    for (auto& [dtype, tol] : e["tolerance"].items()) {
      if (!tol.is_object() || !tol.contains("atol") || !tol.contains("rtol") || !tol["atol"].is_number() ||
          !tol["rtol"].is_number())
        return err("tolerance." + dtype, "must be {\"atol\": number, \"rtol\": number}");
      t.tolerances[dtype] = {tol["atol"].get<double>(), tol["rtol"].get<double>()};
    }
  }
  if (e.contains("profiles")) {
    if (!e["profiles"].is_object()) return err("profiles", "must be an object {profile: {CONST: value}}");
    for (auto& [pname, ov] : e["profiles"].items()) {
      if (!ov.is_object()) return err("profiles." + pname, "must be an object {CONST: value}");
      for (auto& [cname, v] : ov.items()) {
        if (v.is_number())
          t.profiles[pname][cname] = v.dump();
        else if (v.is_string())
          t.profiles[pname][cname] = v.get<std::string>();
        else
          return err("profiles." + pname + "." + cname, "must be a number or a Python-expression string");
      }
    }
  }
  out = std::move(t);
  return std::nullopt;
}

void load_kforge(Suite& s) {
  fs::path manifest = s.root / "suite.json";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(manifest));
  } catch (const std::exception& e) {
    s.skipped.push_back({manifest, "", std::string("not valid JSON: ") + e.what()});
    return;
  }
  s.name = j.value("name", s.root.filename().string());
  s.description = j.value("description", "");
  if (!j.contains("tasks") || !j["tasks"].is_array()) {
    s.skipped.push_back({manifest, "tasks", "required array field is missing"});
    return;
  }
  std::set<std::string> seen;
  const nlohmann::json suite_mode = j.value("module_mode", nlohmann::json("eval"));
  if (suite_mode != "train" && suite_mode != "eval") {
    s.skipped.push_back({manifest, "module_mode", "must be \"train\" or \"eval\""});
    return;
  }
  for (std::size_t i = 0; i < j["tasks"].size(); ++i) {
    Task t;
    nlohmann::json entry = j["tasks"][i];
    if (entry.is_object() && !entry.contains("module_mode")) entry["module_mode"] = suite_mode;
    // A task id names folders kforge writes (common/task_id.hpp): a bad one refuses the suite.
    if (entry.is_object() && entry.contains("id") && entry["id"].is_string())
      if (auto why = task_id_problem(entry["id"].get<std::string>()))
        throw std::runtime_error(manifest.string() + ": tasks[" + std::to_string(i) + "].id: task id '" +
                                 entry["id"].get<std::string>().substr(0, 200) + "' " + *why);
    if (auto e = read_manifest_entry(entry, i, manifest, s.root, t)) {
      s.skipped.push_back(*e);
      continue;
    }
    if (!seen.insert(t.id).second) {
      s.skipped.push_back({manifest, "tasks[" + std::to_string(i) + "].id", "duplicate id '" + t.id + "'"});
      continue;
    }
    s.tasks.push_back(std::move(t));
  }
}

void load_kernelbench(Suite& s, const std::vector<fs::path>& level_dirs) {
  static const std::regex kLevel(R"(level(\d+))");
  for (const auto& d : level_dirs) {
    std::smatch m;
    std::string name = d.filename().string();
    std::regex_match(name, m, kLevel);
    int level = std::stoi(m[1].str());
    for (const auto& f : fs::directory_iterator(d)) {
      if (f.path().extension() != ".py") continue;
      auto r = parse_task_file(f.path(), name + "/" + f.path().stem().string());
      if (r.error) {
        s.skipped.push_back(*r.error);
        continue;
      }
      r.task->difficulty = std::clamp(level, 1, 5);
      r.task->category = kernelbench_category(level, f.path().stem().string());
      s.tasks.push_back(std::move(*r.task));
    }
  }
}

void load_multikernelbench(Suite& s, const fs::path& ref) {
  std::vector<fs::path> folders;
  for (const auto& d : fs::directory_iterator(ref))
    if (d.is_directory()) folders.push_back(d.path());
  std::sort(folders.begin(), folders.end());
  for (const auto& dir : folders) {
    const std::string folder = dir.filename().string();
    const std::string cat = category_of_folder(folder);
    int loaded = 0;
    for (const auto& f : fs::directory_iterator(dir)) {
      if (f.path().extension() != ".py") continue;
      auto r = parse_task_file(f.path(), folder + "/" + f.path().stem().string());
      if (r.error) {
        s.skipped.push_back(*r.error);
        continue;
      }
      r.task->category = cat;
      s.tasks.push_back(std::move(*r.task));
      ++loaded;
    }
    if (loaded && !is_known_category(cat))
      s.notes.push_back((dir).string() + ": folder '" + folder + "' is not one of the 14 categories; its " +
                        std::to_string(loaded) + " task(s) keep the category '" + cat + "'");
  }
}

/// Every format's ids, checked once (common/task_id.hpp): a task id names the folders kforge
/// writes for the task, so an id that is not one refuses the whole suite (a configuration
/// error naming the file the id came from), never a task dropped in silence.
void require_valid_ids(const Suite& s) {
  for (const auto& t : s.tasks)
    if (auto why = task_id_problem(t.id))
      throw std::runtime_error(t.file.string() + ": task id '" + t.id.substr(0, 200) + "' (" + s.layout +
                               " layout) " + *why);
}

}  // namespace

Suite load_suite(const fs::path& dir) {
  if (fs::is_regular_file(dir) || fs::is_regular_file(dir / "operators.txt")) {
    Suite s;  // BackendBench's trace format: one aten_operator task per operator
    const fs::path trace =
        fs::is_regular_file(dir) ? fs::canonical(dir) : fs::canonical(dir / "operators.txt");
    s.root = fs::is_regular_file(dir) ? trace.parent_path() : fs::canonical(dir);
    s.name = fs::is_regular_file(dir) ? trace.stem().string() : s.root.filename().string();
    s.layout = "operators";
    load_operator_suite(s, trace);
    std::sort(s.tasks.begin(), s.tasks.end(),
              [](const Task& a, const Task& b) { return natural_less(a.id, b.id); });
    require_valid_ids(s);
    return s;
  }
  if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + ": suite directory does not exist");
  Suite s;
  s.root = fs::canonical(dir);
  s.name = s.root.filename().string();
  static const std::regex kLevel(R"(level\d+)");
  std::vector<fs::path> levels;
  bool has_category_dirs = false, has_py = false;
  for (const auto& e : fs::directory_iterator(s.root)) {
    if (!e.is_directory()) {
      has_py = has_py || e.path().extension() == ".py";
      continue;
    }
    auto n = e.path().filename().string();
    if (std::regex_match(n, kLevel)) levels.push_back(e.path());
    if (is_known_category(category_of_folder(n))) has_category_dirs = true;
  }
  // KernelBench's level<N>/ folder given itself: one level.
  if (levels.empty() && has_py && std::regex_match(s.name, kLevel)) levels.push_back(s.root);
  std::sort(levels.begin(), levels.end());
  std::vector<TritonBenchChannel> tb_channels;
  if (fs::exists(s.root / "suite.json")) {
    s.layout = "kforge";
    load_kforge(s);
  } else if (detect_tritonbench(s.root, tb_channels)) {
    s.layout = "tritonbench";
    load_tritonbench(s, tb_channels);
  } else if (!levels.empty()) {
    s.layout = "kernelbench";
    load_kernelbench(s, levels);
    const auto named =
        std::count_if(s.tasks.begin(), s.tasks.end(), [](const Task& t) { return !t.category.empty(); });
    s.notes.push_back("KernelBench names no categories: inferred for " + std::to_string(named) + " of " +
                      std::to_string(s.tasks.size()) +
                      " tasks (level 2: fusion, level 3+: full_architecture, level 1: from the file name)");
  } else if (fs::is_directory(s.root / "reference")) {
    s.layout = "multikernelbench";
    load_multikernelbench(s, s.root / "reference");
  } else if (has_category_dirs) {
    s.layout = "multikernelbench";
    load_multikernelbench(s, s.root);
  } else {
    throw std::runtime_error(
        dir.string() +
        ": not a suite (no suite.json, no level<N>/ folders, no reference/<category>/ folders, no "
        "TritonBench data/TritonBench_{T,G}_v1/)");
  }
  // KernelBench and MultiKernelBench build Model(*get_init_inputs()) and call it under no_grad
  // without .eval() (KernelBench's eval harness; MultiKernelBench's follows it): training mode.
  // Their convolutions run through cuDNN, which PyTorch lets use TF32 by default.
  static const std::regex kConv(
      R"((nn\.Conv(Transpose)?[123]d|F\.conv(_transpose)?[123]d|functional\.conv))");
  if (s.layout != "kforge")
    for (auto& t : s.tasks) {
      t.module_mode = "train";
      if (std::regex_search(t.source, kConv)) t.allow_precision = {"tf32"};
    }
  std::sort(s.tasks.begin(), s.tasks.end(),
            [](const Task& a, const Task& b) { return natural_less(a.id, b.id); });
  require_valid_ids(s);
  return s;
}

std::vector<fs::path> builtin_suite_dirs() {
  std::vector<fs::path> out;
  fs::path root = kforge_home() / "benchmarks" / "suites";
  if (!fs::is_directory(root)) return out;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "suite.json")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path resolve_suite(const std::string& name_or_path) {
  for (const auto& d : builtin_suite_dirs())
    if (d.filename() == name_or_path) return d;
  if (fs::is_directory(name_or_path)) return name_or_path;
  throw std::runtime_error("--suite " + name_or_path +
                           ": neither a built-in suite nor a directory (see `kforge suites`)");
}

}  // namespace kforge
