// benchmarks/src/generalisation.cpp — <run>/generalisation.json (generalisation.hpp).
#include "kforge/benchmarks/generalisation.hpp"

#include <nlohmann/json.hpp>

#include "kforge/common/json_text.hpp"
#include "kforge/common/util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kforge {

fs::path generalisation_path(const fs::path& run_dir) {
  return run_dir / "generalisation.json";
}

const std::string& unseen_rule_text() {
  static const std::string s =
      "every size in [16, 2^31) grows by 7 (a multiple of 16 becomes odd; smaller values such as "
      "kernel sizes, ranks and dim indices stay): a KernelBench-format task is judged on its run's "
      "profile with that rule applied to the constants get_inputs() uses (profile `<P>+unseen`), an "
      "operator on every case with that rule applied to its tensor dimensions and integer arguments";
  return s;
}

std::optional<GeneralisationFile> read_generalisation(const fs::path& run_dir) {
  const fs::path p = generalisation_path(run_dir);
  if (!fs::is_regular_file(p)) return std::nullopt;
  json j = json::parse(read_file(p), nullptr, false);
  if (!j.is_object()) return std::nullopt;
  GeneralisationFile g;
  g.rule = j.value("rule", "");
  g.profile = j.value("profile", "");
  g.device = j.value("device", "");
  g.checked_at = j.value("checked_at", "");
  if (j.contains("kernels") && j["kernels"].is_object())
    for (const auto& [task, v] : j["kernels"].items()) {
      if (!v.is_object()) continue;
      Generalisation x;
      if (v.contains("generalises") && v["generalises"].is_boolean())
        x.generalises = v["generalises"].get<bool>();
      x.reason = v.value("reason", "");
      x.source_sha = v.value("source_sha", "");
      x.backend = v.value("backend", "");
      x.outcome = v.value("outcome", "");
      x.sub_kind = v.value("sub_kind", "");
      x.unseen = v.value("unseen", "");
      g.kernels[task] = std::move(x);
    }
  return g;
}

void write_generalisation(const fs::path& run_dir, const GeneralisationFile& g) {
  json j{{"rule", g.rule},
         {"profile", g.profile},
         {"device", g.device},
         {"checked_at", g.checked_at},
         {"kernels", generalisation_json(g.kernels)}};
  write_file(generalisation_path(run_dir), dump_json(j, 2) + "\n");
}

std::optional<Generalisation> generalisation_of(const std::map<std::string, Generalisation>& g,
                                                const std::string& task, const std::string& source_sha) {
  auto it = g.find(task);
  if (it == g.end() || it->second.source_sha != source_sha) return std::nullopt;
  return it->second;
}

std::string generalises_text(const std::optional<bool>& g) {
  return !g ? "unknown" : *g ? "yes" : "no";
}

}  // namespace kforge
