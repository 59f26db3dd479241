// bench_feedback — does the profile step name the right problem? (issue 11 §4)
//
// For each deliberately slow kernel of bench/data/slow_kernels/manifest.json it reads the
// kernel's ncu report (<reports>/<defect>/ncu_candidate.csv; by default the recorded fixtures
// next to the manifest), derives the bottleneck class (DRAM vs SM speed of light, the roofline
// thresholds of benchmarks/roofline.hpp) and the findings (backends/profile: ncu.hpp), and prints a
// table: defect, expected finding, top finding, match; then writes the rows as JSON.
//
//   bench_feedback [out.json] [--reports DIR]
//
// On the GPU machine: compile each kernel.cu, run it under the command of ncu_argv() (one call,
// --csv --page raw) into DIR/<defect>/ncu_candidate.csv, then run this with --reports DIR.
// Exit status 0 when every top finding matches, 1 otherwise, 2 on a missing input.
#include <cstdio>
#include <filesystem>
#include <string>

#include "bench_util.hpp"
#include "kforge/backends/ncu.hpp"
#include "kforge/benchmarks/roofline.hpp"
#include "kforge/common/util.hpp"

using namespace kforge;
namespace fs = std::filesystem;
using json = nlohmann::json;

int main(int argc, char** argv) {
  const fs::path data = kforge_home() / "bench" / "data" / "slow_kernels";
  fs::path reports = data;
  int json_argc = 1;
  char* json_argv[2] = {argv[0], nullptr};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reports" && i + 1 < argc)
      reports = argv[++i];
    else if (json_argc == 1) {
      json_argv[1] = argv[i];
      json_argc = 2;
    }
  }
  json manifest;
  try {
    manifest = json::parse(read_file(data / "manifest.json"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_feedback: %s: %s\n", (data / "manifest.json").c_str(), e.what());
    return 2;
  }
  std::printf("reports: %s\n\n", reports.c_str());
  std::printf("%-16s %-15s %-15s %-26s %-26s %-5s\n", "defect", "expected class", "class", "expected finding",
              "top finding", "match");
  json rows = json::array();
  int matched = 0, total = 0;
  for (const auto& k : manifest.at("kernels")) {
    const std::string defect = k.at("defect");
    const fs::path csv = reports / defect / "ncu_candidate.csv";
    if (!fs::exists(csv)) {
      std::fprintf(stderr, "bench_feedback: %s: no report\n", csv.c_str());
      return 2;
    }
    const auto report = backends::parse_ncu_csv(read_file(csv));
    const auto findings = backends::ncu_findings(report);
    double dram = -1, sm = -1, w = 0;
    for (const auto& kp : report.kernels) {
      if (!kp.has("dram__throughput.avg.pct_of_peak_sustained_elapsed")) continue;
      if (dram < 0) dram = sm = 0;
      dram += kp.time_ms * kp.get("dram__throughput.avg.pct_of_peak_sustained_elapsed");
      sm += kp.time_ms * kp.get("sm__throughput.avg.pct_of_peak_sustained_elapsed");
      w += kp.time_ms;
    }
    const Bottleneck cls = w > 0 ? classify_fractions(dram / w / 100, sm / w / 100) : Bottleneck::unknown;
    const std::string top = findings.empty() ? "-" : findings[0].label;
    const bool finding_ok = top == k.at("expected_finding").get<std::string>();
    const bool class_ok = std::string(to_string(cls)) == k.at("expected_bottleneck").get<std::string>();
    ++total;
    matched += finding_ok && class_ok;
    std::printf("%-16s %-15s %-15s %-26s %-26s %-5s\n", defect.c_str(),
                k.at("expected_bottleneck").get<std::string>().c_str(), std::string(to_string(cls)).c_str(),
                k.at("expected_finding").get<std::string>().c_str(), top.c_str(),
                finding_ok && class_ok ? "yes" : "NO");
    json f = json::array();
    for (const auto& x : findings)
      f.push_back(
          {{"label", x.label}, {"value", x.value}, {"unit", x.unit}, {"interpretation", x.interpretation}});
    rows.push_back({{"defect", defect},
                    {"task", k.at("task")},
                    {"expected_bottleneck", k.at("expected_bottleneck")},
                    {"bottleneck", std::string(to_string(cls))},
                    {"expected_finding", k.at("expected_finding")},
                    {"top_finding", top},
                    {"match", finding_ok && class_ok},
                    {"kernels", report.kernels.size()},
                    {"profiled_ms", report.total_ms()},
                    {"findings", f}});
  }
  std::printf("\n%d/%d defects named correctly\n", matched, total);
  bench::write_json(json_argc, json_argv, "feedback", {{"reports", reports.string()}, {"rows", rows}});
  return matched == total ? 0 : 1;
}
