// [profile][ncu] issue 11 §1: the curated Nsight Compute metric set, the ncu argv, the CSV
// parser on recorded ncu output (tests/data/profile/ncu_raw.csv: --page raw of a PyTorch
// reference; ncu_details.csv: the long --page details layout; bench/data/slow_kernels/*: one
// candidate per defect), and the findings. A live ncu run needs a GPU with counters: it skips
// here with the reason.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "catch.hpp"
#include "kforge/backends/ncu.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

using namespace kforge;
using namespace kforge::backends;
namespace fs = std::filesystem;

namespace {
const fs::path kData = fs::path(KFORGE_TESTS_DIR) / "data/profile";
const fs::path kSlow = fs::path(KFORGE_TESTS_DIR) / "../bench/data/slow_kernels";
}  // namespace

TEST_CASE("the curated ncu metric set: every metric has a label, unit, group and reason", "[profile][ncu]") {
  auto ms = load_ncu_metrics();
  CHECK(ms.size() >= 20);
  std::set<std::string> names;
  for (const auto& m : ms) {
    INFO(m.name);
    CHECK(names.insert(m.name).second);  // no duplicates
    CHECK(m.name.find("__") != std::string::npos);
    CHECK(m.reason.size() > 20);
  }
  for (const char* must :
       {"gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_active", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
        "smsp__sass_average_branch_targets_threads_uniform.pct"})
    CHECK(names.count(must) == 1);
  // Issue 21 §4: each metric adds replay passes to every profiled launch, so the set holds only
  // what the findings or the kernel times read (ncu.cpp names it), and launch__ values (free).
  const std::string reader = read_file(fs::path(KFORGE_TESTS_DIR) / "../backends/profile/src/ncu.cpp");
  for (const auto& m : ms) {
    INFO(m.name);
    CHECK((m.name.rfind("launch__", 0) == 0 || reader.find('"' + m.name + '"') != std::string::npos));
  }
  const fs::path bad = fs::temp_directory_path() / "kforge-bad-ncu-metrics.json";
  write_file(bad, R"({"metrics": [{"name": "a__b", "label": "x", "group": "g", "unit": "%"}]})");
  CHECK_THROWS_WITH(load_ncu_metrics(bad), Catch::Contains("metrics[0].reason"));
  fs::remove(bad);
}

TEST_CASE("ncu argv: csv raw page, base units, the metric list, all processes, then the target",
          "[profile][ncu]") {
  std::vector<NcuMetric> ms = {{"gpu__time_duration.sum", "t", "time", "ns", "r"},
                               {"dram__bytes_read.sum", "b", "memory", "bytes", "r"}};
  NcuOptions o;
  o.ncu = "/usr/local/cuda/bin/ncu";
  o.launch_count = 50;
  o.kernel_filter = "^(?!at::).*";
  auto a = ncu_argv(ms, {"/opt/kforge/bin/host", "--one-call"}, o);
  const std::vector<std::string> want = {"/usr/local/cuda/bin/ncu",
                                         "--csv",
                                         "--page",
                                         "raw",
                                         "--print-units",
                                         "base",
                                         "--metrics",
                                         "gpu__time_duration.sum,dram__bytes_read.sum",
                                         "--target-processes",
                                         "all",
                                         "-k",
                                         "regex:^(?!at::).*",
                                         "-c",
                                         "50",
                                         "/opt/kforge/bin/host",
                                         "--one-call"};
  CHECK(a == want);
}

TEST_CASE("parse_ncu_csv: --page raw with units row, quoted names with commas, thousands separators",
          "[profile][ncu]") {
  auto r = parse_ncu_csv(read_file(kData / "ncu_raw.csv"));
  REQUIRE(r.kernels.size() == 3);
  const auto& k0 = r.kernels[0];
  CHECK(k0.id == 0);
  CHECK(starts_with(k0.name,
                    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl("));
  CHECK(k0.block == "(128, 1, 1)");
  CHECK(k0.grid == "(65536, 1, 1)");
  CHECK(k0.get("dram__bytes_read.sum") == 33587200.0);
  CHECK(k0.get("dram__throughput.avg.pct_of_peak_sustained_elapsed") == 86.71);
  CHECK(std::abs(k0.time_ms - 0.025152) < 1e-12);
  CHECK(k0.units.at("gpu__time_duration.sum") == "nsecond");
  CHECK_FALSE(r.kernels[2].has("dram__bytes_read.sum"));  // "n/a"
  CHECK(std::abs(r.total_ms() - (0.025152 + 0.025344 + 0.004128)) < 1e-12);
  REQUIRE(r.notes.size() == 1);
  CHECK_THAT(r.notes[0], Catch::Contains("uncontrolled GPU clocks"));
  auto t = kernel_times(r);
  REQUIRE(t.size() == 2);
  CHECK(t[0].launches == 2);
  CHECK(std::abs(t[0].ms - (0.025152 + 0.025344)) < 1e-12);
  CHECK(t[1].launches == 1);
  CHECK_THAT(t[1].name, Catch::Contains("reduce_kernel"));
}

TEST_CASE("parse_ncu_csv: the long --page details layout and scaled units", "[profile][ncu]") {
  auto r = parse_ncu_csv(read_file(kData / "ncu_details.csv"));
  REQUIRE(r.kernels.size() == 1);
  const auto& k = r.kernels[0];
  CHECK(k.name == "gelu_kernel(const float *, float *, long)");
  CHECK(std::abs(k.time_ms - 0.02352) < 1e-12);                     // usecond -> ns -> ms
  CHECK(std::abs(k.get("dram__bytes_read.sum") - 33.55e6) < 1e-3);  // Mbyte -> bytes
  CHECK(k.get("dram__throughput.avg.pct_of_peak_sustained_elapsed") == 92.1);
  auto f = ncu_findings(r);
  REQUIRE_FALSE(f.empty());
  CHECK(f[0].label == "DRAM throughput");
  CHECK_THAT(f[0].interpretation, Catch::Contains("DRAM at 92% of peak: memory-bound"));
}

TEST_CASE("parse_ncu_csv: garbage and empty input give an empty report", "[profile][ncu]") {
  CHECK(parse_ncu_csv("").empty());
  CHECK(parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                      "Performance Counters\n")
            .empty());
  auto r = parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n");
  REQUIRE(r.notes.size() == 1);
  CHECK_THAT(r.notes[0], Catch::Contains("ERR_NVGPUCTRPERM"));
}

TEST_CASE("findings name the defect of each recorded slow kernel", "[profile][ncu]") {
  const std::vector<std::pair<std::string, std::string>> want = {{"uncoalesced", "uncoalesced global access"},
                                                                 {"spilling", "local memory (spills)"},
                                                                 {"low_occupancy", "low occupancy"},
                                                                 {"bank_conflicted", "shared bank conflicts"},
                                                                 {"launch_bound", "launch overhead"}};
  for (const auto& [defect, label] : want) {
    INFO(defect);
    auto r = parse_ncu_csv(read_file(kSlow / defect / "ncu_candidate.csv"));
    REQUIRE_FALSE(r.empty());
    auto f = ncu_findings(r);
    REQUIRE(f.size() >= 2);
    CHECK(f.size() <= 4);
    CHECK(f[0].label == label);
    for (std::size_t i = 1; i < f.size(); ++i) CHECK(f[i - 1].score >= f[i].score);
  }
  auto u = ncu_findings(parse_ncu_csv(read_file(kSlow / "uncoalesced/ncu_candidate.csv")));
  CHECK_THAT(u[0].interpretation, Catch::Contains("32.0 sectors per request"));
  auto o = ncu_findings(parse_ncu_csv(read_file(kSlow / "low_occupancy/ncu_candidate.csv")));
  CHECK_THAT(o[0].interpretation, Catch::Contains("limited by blocks per SM (blocks too small)"));
  CHECK_THAT(o[0].interpretation, Catch::Contains("only 64 blocks launched"));
}

TEST_CASE("profiler mode: auto is ncu where available, else basic", "[profile][ncu]") {
  CHECK(resolve_profiler("auto", true) == "ncu");
  CHECK(resolve_profiler("auto", false) == "basic");
  CHECK(resolve_profiler("", false) == "basic");
  CHECK(resolve_profiler("none", true) == "none");
  CHECK(resolve_profiler("ncu", false) == "ncu");  // asked for: the run notes ncu's absence per attempt
  CHECK_FALSE(resolve_profiler("nsys", true));
}

TEST_CASE("live ncu --version (the profiled run needs the GPU machine)", "[profile][ncu]") {
  auto ncu = find_ncu();
  if (!ncu) {
    WARN(
        "SKIPPED: ncu not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin (set KFORGE_NCU): profiling "
        "is "
        "tested on the recorded CSV fixtures");
    return;
  }
  sandbox::Spec s;
  s.argv = {ncu->string(), "--version"};
  auto r = sandbox::run(s);
  CHECK(r.ok());
  CHECK_THAT(r.out, Catch::Contains("NVIDIA"));
}

TEST_CASE("findings: coalesced 16-byte vector loads (16 sectors per request) are not called uncoalesced",
          "[profile][ncu]") {
  // The H100 reading of the float4 gelu exemplar: 16.0 sectors/request at 85% of DRAM peak.
  ProfileReport r;
  KernelProfile k;
  k.name = "gelu_vec4";
  k.time_ms = 0.18;
  k.metrics = {{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 16.0 * 65536},
               {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 65536},
               {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 85}};
  r.kernels.push_back(k);
  for (const auto& f : ncu_findings(r)) CHECK(f.label != "uncoalesced global access");
  r.kernels[0].metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] = 32.0 * 65536;
  auto f = ncu_findings(r);
  REQUIRE_FALSE(f.empty());
  CHECK(f[0].label == "uncoalesced global access");
}

TEST_CASE("branch uniformity: a kernel that never branches is not '0% uniform'", "[profile][ncu]") {
  auto has_divergence = [](const ProfileReport& r) {
    for (const auto& f : ncu_findings(r, 10))
      if (f.label == "branch divergence") return true;
    return false;
  };
  // ncu_no_branches.csv: ncu's raw layout; a straight-line ReLU reads 0% (0 of 0 branch targets,
  // the reading of issue 21 §4) next to a kernel whose branches are all uniform.
  auto none = parse_ncu_csv(read_file(kData / "ncu_no_branches.csv"));
  REQUIRE(none.kernels.size() == 2);
  CHECK(none.kernels[0].get("smsp__sass_average_branch_targets_threads_uniform.pct", -1) == 0);
  CHECK(none.kernels[0].get("smsp__sass_branch_targets.sum", -1) == 0);
  CHECK_FALSE(has_divergence(none));
  // A kernel whose warps do split is still named, with its own percentage.
  auto split = parse_ncu_csv(read_file(kData / "ncu_divergent.csv"));
  REQUIRE(split.kernels.size() == 1);
  auto f = ncu_findings(split, 10);
  auto it =
      std::find_if(f.begin(), f.end(), [](const MetricFinding& m) { return m.label == "branch divergence"; });
  REQUIRE(it != f.end());
  CHECK(std::fabs(it->value - 50.03) < 1e-9);
  CHECK(it->interpretation.find("only 50%") != std::string::npos);
  // Reports without the branch counts (earlier metric sets): an exact 0 is the empty ratio, a
  // low non-zero reading is divergence.
  ProfileReport old;
  old.kernels.push_back({});
  old.kernels[0].time_ms = 1;
  old.kernels[0].metrics["smsp__sass_average_branch_targets_threads_uniform.pct"] = 0;
  CHECK_FALSE(has_divergence(old));
  old.kernels[0].metrics["smsp__sass_average_branch_targets_threads_uniform.pct"] = 40;
  CHECK(has_divergence(old));
  // Branches were counted and none diverged: no divergence, whatever the percentage reads.
  old.kernels[0].metrics["smsp__sass_branch_targets.sum"] = 100;
  old.kernels[0].metrics["smsp__sass_branch_targets_threads_divergent.sum"] = 0;
  CHECK_FALSE(has_divergence(old));
}
