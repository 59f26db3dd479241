#include "kforge/backends/ncu.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "kforge/common/util.hpp"

namespace kforge::backends {

namespace fs = std::filesystem;

fs::path default_ncu_metrics_file() {
  return kforge_home() / "backends" / "profile" / "ncu_metrics.json";
}

std::vector<NcuMetric> reference_metrics(const std::vector<NcuMetric>& metrics) {
  std::vector<NcuMetric> out;
  for (const auto& m : metrics)
    if (m.group == "time" || m.name.rfind("launch__", 0) == 0) out.push_back(m);
  return out;
}

std::vector<NcuMetric> load_ncu_metrics(const fs::path& file) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(file));
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  if (!j.is_object() || !j.contains("metrics") || !j["metrics"].is_array())
    throw std::runtime_error(file.string() + ": metrics: expected an array");
  std::vector<NcuMetric> out;
  for (std::size_t i = 0; i < j["metrics"].size(); ++i) {
    const auto& m = j["metrics"][i];
    const std::string at = file.string() + ": metrics[" + std::to_string(i) + "]";
    if (!m.is_object()) throw std::runtime_error(at + ": expected an object");
    NcuMetric x;
    for (auto [key, field] :
         {std::pair{"name", &x.name}, std::pair{"label", &x.label}, std::pair{"group", &x.group},
          std::pair{"unit", &x.unit}, std::pair{"reason", &x.reason}}) {
      if (!m.contains(key) || !m[key].is_string() || m[key].get<std::string>().empty())
        throw std::runtime_error(at + "." + key + ": expected a non-empty string");
      *field = m[key].get<std::string>();
    }
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<std::string> ncu_argv(const std::vector<NcuMetric>& metrics,
                                  const std::vector<std::string>& target, const NcuOptions& opt) {
  std::string list;
  for (const auto& m : metrics) list += (list.empty() ? "" : ",") + m.name;
  std::vector<std::string> argv = {opt.ncu.string(),     "--csv", "--page",    "raw",
                                   "--print-units",      "base",  "--metrics", list,
                                   "--target-processes", "all"};
  if (!opt.profile_from_start) argv.insert(argv.end(), {"--profile-from-start", "off"});
  if (!opt.replay_mode.empty()) argv.insert(argv.end(), {"--replay-mode", opt.replay_mode});
  if (!opt.cache_control.empty()) argv.insert(argv.end(), {"--cache-control", opt.cache_control});
  if (!opt.kernel_filter.empty()) argv.insert(argv.end(), {"-k", "regex:" + opt.kernel_filter});
  if (opt.launch_count > 0) argv.insert(argv.end(), {"-c", std::to_string(opt.launch_count)});
  if (!opt.report_csv.empty()) argv.insert(argv.end(), {"--log-file", opt.report_csv.string()});
  argv.insert(argv.end(), target.begin(), target.end());
  return argv;
}

std::string choose_replay_mode(bool idempotent, bool cheap_restart, double device_bytes,
                               double device_memory) {
  if (const char* o = std::getenv("KFORGE_NCU_REPLAY");
      o && (std::string(o) == "kernel" || std::string(o) == "application"))
    return o;
  return idempotent && cheap_restart && device_memory > 0 && 2 * device_bytes > device_memory ? "application"
                                                                                              : "kernel";
}

double KernelProfile::get(const std::string& m, double dflt) const {
  auto it = metrics.find(m);
  return it == metrics.end() ? dflt : it->second;
}

double ProfileReport::total_ms() const {
  double t = 0;
  for (const auto& k : kernels) t += k.time_ms;
  return t;
}

namespace {

/// One CSV record (RFC 4180 quoting); false when the line is not CSV-looking.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::optional<double> number(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  s = trim(s);
  if (s.empty() || s == "n/a") return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

/// Factor from a printed unit to the base unit kforge uses (ns for time, bytes for sizes).
double unit_factor(const std::string& u) {
  static const std::map<std::string, double> k = {
      {"nsecond", 1},        {"usecond", 1e3},      {"msecond", 1e6},      {"second", 1e9},
      {"byte", 1},           {"Kbyte", 1e3},        {"Mbyte", 1e6},        {"Gbyte", 1e9},
      {"Tbyte", 1e12},       {"KB", 1e3},           {"MB", 1e6},           {"GB", 1e9},
      {"Kbyte/second", 1e3}, {"Mbyte/second", 1e6}, {"Gbyte/second", 1e9}, {"Tbyte/second", 1e12}};
  auto it = k.find(u);
  return it == k.end() ? 1.0 : it->second;
}

int column(const std::vector<std::string>& header, const char* name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

constexpr const char* kTime = "gpu__time_duration.sum";

/// ncu's own lines worth keeping in the report's notes: errors, warnings, and ==PROF== lines
/// other than its progress ("Profiling", "Connected", "Disconnected").
bool ncu_note_line(const std::string& line) {
  return starts_with(line, "==ERROR==") || starts_with(line, "==WARNING==") ||
         (starts_with(line, "==PROF==") && line.find("Profiling") == std::string::npos &&
          line.find("Connected") == std::string::npos && line.find("Disconnected") == std::string::npos);
}

/// A metric's value in base units (unit_factor) with its unit; nothing when the value is no number.
void put_metric(KernelProfile& k, const std::string& name, const std::string& value,
                const std::string& unit) {
  if (auto v = number(value)) {
    k.metrics[name] = *v * unit_factor(unit);
    k.units[name] = unit;
  }
}

/// The columns of ncu's CSV header: the raw page's wide form (one metric per column, named with
/// a double underscore, its units in the next row) or the long form (Metric Name/Unit/Value).
struct NcuColumns {
  std::vector<std::string> header;
  int id = -1, name = -1, block = -1, grid = -1, mname = -1, munit = -1, mval = -1;
  bool long_form = false;

  explicit NcuColumns(std::vector<std::string> h) : header(std::move(h)) {
    id = column(header, "ID");
    name = column(header, "Kernel Name");
    block = column(header, "Block Size");
    grid = column(header, "Grid Size");
    mname = column(header, "Metric Name");
    munit = column(header, "Metric Unit");
    mval = column(header, "Metric Value");
    long_form = mname >= 0 && mval >= 0;
  }
  static bool is_header(const std::vector<std::string>& f) {
    return column(f, "ID") >= 0 && column(f, "Kernel Name") >= 0;
  }
  /// Field c of a record ("" when it has none).
  static std::string at(const std::vector<std::string>& f, int c) {
    return c >= 0 && static_cast<std::size_t>(c) < f.size() ? f[static_cast<std::size_t>(c)] : "";
  }
  /// The kernel a record names, without metrics.
  KernelProfile kernel(const std::vector<std::string>& f, int kid) const {
    KernelProfile k;
    k.id = kid;
    k.name = at(f, name);
    k.block = at(f, block);
    k.grid = at(f, grid);
    return k;
  }
  /// A wide-form record's kernel with every metric column.
  KernelProfile wide_kernel(const std::vector<std::string>& f, int kid,
                            const std::vector<std::string>& units) const {
    KernelProfile k = kernel(f, kid);
    for (std::size_t c = 0; c < header.size() && c < f.size(); ++c)
      if (header[c].find("__") != std::string::npos)  // metric names have a double underscore
        put_metric(k, header[c], f[c], c < units.size() ? units[c] : "");
    return k;
  }
};

}  // namespace

ProfileReport parse_ncu_csv(std::string_view text) {
  ProfileReport r;
  std::optional<NcuColumns> cols;
  std::vector<std::string> units;
  bool expect_units = false;
  std::map<int, std::size_t> by_id;  // long form: kernel id -> index
  for (const auto& raw : split_lines(text)) {
    const std::string line = trim(raw);
    if (line.empty()) continue;
    if (line[0] != '"') {
      if (ncu_note_line(line)) r.notes.push_back(line);
      continue;
    }
    auto f = csv_fields(line);
    if (!cols) {
      if (!NcuColumns::is_header(f)) continue;
      cols.emplace(f);
      expect_units = !cols->long_form;
      continue;
    }
    if (expect_units) {
      expect_units = false;
      if (f.size() > static_cast<std::size_t>(cols->id) && f[static_cast<std::size_t>(cols->id)].empty()) {
        units = f;  // the units row of --page raw: "", "", ..., "nsecond", "%"
        continue;
      }
    }
    const auto id = number(NcuColumns::at(f, cols->id));
    if (!id) continue;
    const int kid = static_cast<int>(*id);
    if (!cols->long_form) {
      r.kernels.push_back(cols->wide_kernel(f, kid, units));
      continue;
    }
    auto it = by_id.find(kid);
    if (it == by_id.end()) {
      it = by_id.emplace(kid, r.kernels.size()).first;
      r.kernels.push_back(cols->kernel(f, kid));
    }
    put_metric(r.kernels[it->second], NcuColumns::at(f, cols->mname), NcuColumns::at(f, cols->mval),
               NcuColumns::at(f, cols->munit));
  }
  for (auto& k : r.kernels) k.time_ms = k.get(kTime) * 1e-6;  // ns -> ms
  return r;
}

std::vector<KernelTime> kernel_times(const ProfileReport& r) {
  std::vector<KernelTime> out;
  for (const auto& k : r.kernels) {
    auto it = std::find_if(out.begin(), out.end(), [&](const KernelTime& t) { return t.name == k.name; });
    if (it == out.end()) {
      out.push_back({k.name, 0, 0});
      it = out.end() - 1;
    }
    it->ms += k.time_ms;
    it->launches += 1;
  }
  return out;
}

namespace {

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

/// Time-weighted mean of a ratio metric over the kernels that report it (-1 when none).
double weighted(const ProfileReport& r, const std::string& m) {
  double w = 0, s = 0;
  for (const auto& k : r.kernels) {
    if (!k.has(m)) continue;
    const double t = k.time_ms > 0 ? k.time_ms : 1e-9;
    w += t;
    s += t * k.get(m);
  }
  return w > 0 ? s / w : -1;
}
double summed(const ProfileReport& r, const std::string& m) {
  double s = 0;
  for (const auto& k : r.kernels) s += k.get(m);
  return s;
}
bool any(const ProfileReport& r, const std::string& m) {
  for (const auto& k : r.kernels)
    if (k.has(m)) return true;
  return false;
}

/// The time-weighted share of warp-uniform branch targets (%) over the kernels that branch; -1
/// when none does. ncu reports smsp__sass_average_branch_targets_threads_uniform.pct as 0 for a
/// kernel that executed no branch at all (0 of 0: a straight-line elementwise kernel read "only 0%
/// of branches are warp-uniform", issue 21 §4), so a kernel counts only where
/// smsp__sass_branch_targets.sum shows branches; where the report lacks that count (older
/// metric sets), an exact 0 is taken for that empty ratio. No divergent branch target
/// (smsp__sass_branch_targets_threads_divergent.sum, when reported) means no divergence.
double branch_uniformity(const ProfileReport& r) {
  const std::string pct = "smsp__sass_average_branch_targets_threads_uniform.pct";
  const std::string targets = "smsp__sass_branch_targets.sum";
  const std::string divergent = "smsp__sass_branch_targets_threads_divergent.sum";
  double w = 0, s = 0;
  bool divergence_counted = false;
  double divergent_targets = 0;
  for (const auto& k : r.kernels) {
    if (!k.has(pct)) continue;
    if (k.has(targets) ? !(k.get(targets) > 0) : k.get(pct) == 0) continue;  // no branch executed
    if (k.has(divergent)) {
      divergence_counted = true;
      divergent_targets += k.get(divergent);
    }
    const double t = k.time_ms > 0 ? k.time_ms : 1e-9;
    w += t;
    s += t * k.get(pct);
  }
  if (w == 0 || (divergence_counted && divergent_targets == 0)) return -1;
  return s / w;
}

using Findings = std::vector<MetricFinding>;
const std::string kLdSectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";

/// Launch overhead: many short kernels in one call.
void launch_overhead(const ProfileReport& r, Findings& f) {
  const double n = static_cast<double>(r.kernels.size());
  const double mean_us = r.total_ms() * 1e3 / n;
  if (r.kernels.size() >= 4 && mean_us < 10)
    f.push_back(
        {kTime, "launch overhead", n, "launches",
         fmt("%.0f kernel launches averaging %.1f us each: launch overhead dominates; fuse them into one "
             "kernel (or a few)",
             n, mean_us),
         0.6 + std::min(0.4, n / 100.0)});
}

/// Uncoalesced global loads: sectors per load request.
void coalescing(const ProfileReport& r, Findings& f) {
  const std::string ld_req = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
  if (summed(r, ld_req) > 0) {
    const double spr = summed(r, kLdSectors) / summed(r, ld_req);
    // A warp's coalesced request of 4-byte loads takes 4 sectors, of 16-byte vector loads 16:
    // beyond 16 some lanes fetch sectors of their own whatever the load width (on an H100 the
    // float4 exemplars measure exactly 16.0; a column-major walk 32).
    if (spr > 16.5)
      f.push_back(
          {kLdSectors, "uncoalesced global access", spr, "sectors/request",
           fmt("uncoalesced global loads: %.1f sectors per request (coalesced: 4 for 4-byte loads, 16 for "
               "16-byte vector loads); make consecutive threads (threadIdx.x) read consecutive addresses",
               spr),
           0.55 + std::min(0.45, (spr - 16) / 32)});
  }
}

/// Register spills and run-time-indexed local arrays: local-memory traffic.
void spills(const ProfileReport& r, Findings& f) {
  const double local = summed(r, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum") +
                       summed(r, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum");
  if (local > 0) {
    const double share = local / (local + summed(r, kLdSectors));
    f.push_back(
        {"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "local memory (spills)", local, "sectors",
         fmt("%.0f local-memory sectors (%.0f%% of load/store traffic): registers spill or a local array is "
             "indexed at run time; keep fewer values live, unroll with constant indices, relax "
             "__launch_bounds__/maxrregcount",
             local, 100 * share),
         // Spills are a root cause: they take registers' place in memory and usually come with
         // register-limited occupancy and memory stalls, which they explain; a tenth of the
         // traffic (H100, the spilling slow kernel) outranks those symptoms.
         0.5 + std::min(0.45, share * 4)});
  }
}

/// Shared-memory bank conflicts.
void bank_conflicts(const ProfileReport& r, Findings& f) {
  const double wavefronts = summed(r, "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum");
  const double conflicts = summed(r, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum");
  if (wavefronts > 0 && conflicts / wavefronts > 0.1) {
    const double share = conflicts / wavefronts;
    f.push_back(
        {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "shared bank conflicts", 100 * share, "%",
         fmt("shared-memory bank conflicts: %.0f%% of shared wavefronts are conflict replays (%.1f-way on "
             "average); pad the shared array (+1 column) or change the access stride",
             100 * share, 1 + conflicts / std::max(1.0, wavefronts - conflicts)),
         0.5 + std::min(0.45, share / 2)});
  }
}

/// Low occupancy, with what limits it.
void occupancy(const ProfileReport& r, Findings& f) {
  const double occ = weighted(r, "sm__warps_active.avg.pct_of_peak_sustained_active");
  if (occ >= 0 && occ < 30) {
    const double theo = weighted(r, "sm__maximum_warps_per_active_cycle_pct");
    std::string limiter;
    double lim = 1e30;
    for (auto [m, what] : {std::pair{"launch__occupancy_limit_blocks", "blocks per SM (blocks too small)"},
                           std::pair{"launch__occupancy_limit_registers", "registers"},
                           std::pair{"launch__occupancy_limit_shared_mem", "shared memory"},
                           std::pair{"launch__occupancy_limit_warps", "block size"}}) {
      if (!any(r, m)) continue;
      const double v = weighted(r, m);
      if (v < lim) {
        lim = v;
        limiter = what;
      }
    }
    std::string text = fmt("low occupancy: %.0f%% of warp slots active", occ);
    if (theo >= 0)
      text += fmt(" (theoretical %.0f%%", theo) + (limiter.empty() ? ")" : ", limited by " + limiter + ")");
    const double grid = weighted(r, "launch__grid_size");
    if (grid > 0 && grid < 132) text += fmt("; only %.0f blocks launched", grid);
    text +=
        ": too few warps to hide latency; more threads/blocks or fewer registers/shared memory per thread";
    f.push_back({"sm__warps_active.avg.pct_of_peak_sustained_active", "low occupancy", occ, "%", text,
                 0.5 + (30 - occ) / 70});
  }
}

/// DRAM or SM throughput near its peak, or neither (latency-bound).
void speed_of_light(const ProfileReport& r, Findings& f) {
  const double dram = weighted(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  const double sm = weighted(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  if (dram >= 60)
    f.push_back(
        {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput", dram, "%",
         fmt("DRAM at %.0f%% of peak: memory-bound; only moving fewer bytes (fusion, reuse) makes it faster",
             dram),
         0.35 + dram / 400});
  if (sm >= 60)
    f.push_back({"sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput", sm, "%",
                 fmt("SM pipelines at %.0f%% of peak: compute-bound; fewer or cheaper instructions", sm),
                 0.35 + sm / 400});
  if (dram >= 0 && sm >= 0 && dram < 60 && sm < 60)
    f.push_back({"sm__throughput.avg.pct_of_peak_sustained_elapsed", "speed of light", std::max(dram, sm),
                 "%", fmt("neither DRAM (%.0f%%) nor SM (%.0f%%) is near its peak: latency-bound", dram, sm),
                 0.25});
}

/// Warp stalls: the top three.
void warp_stalls(const ProfileReport& r, Findings& f) {
  std::vector<std::pair<double, std::string>> stalls;
  static const std::pair<const char*, const char*> kStalls[] = {
      {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
       "long scoreboard (global/local memory)"},
      {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "barrier"},
      {"smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
       "short scoreboard (shared memory/MUFU)"},
      {"smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio", "MIO throttle"},
      {"smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio", "LG throttle"},
      {"smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio", "math pipe throttle"},
      {"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "wait (dependencies)"}};
  for (auto [m, what] : kStalls)
    if (any(r, m)) stalls.push_back({weighted(r, m), what});
  std::sort(stalls.begin(), stalls.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (!stalls.empty() && stalls[0].first > 0) {
    std::string text = "top warp stalls (warps per issue): ";
    for (std::size_t i = 0; i < stalls.size() && i < 3; ++i)
      text += (i ? ", " : "") + stalls[i].second + fmt(" %.1f", stalls[i].first);
    f.push_back({kStalls[0].first, "warp stalls", stalls[0].first, "warps/issue", text,
                 0.3 + std::min(0.2, stalls[0].first / 50)});
  }
}

/// Branch divergence: the share of warp-uniform branches.
void divergence(const ProfileReport& r, Findings& f) {
  const double uniform = branch_uniformity(r);
  if (uniform >= 0 && uniform < 80)
    f.push_back(
        {"smsp__sass_average_branch_targets_threads_uniform.pct", "branch divergence", uniform, "%",
         fmt("only %.0f%% of branches are warp-uniform: threads of a warp take different paths", uniform),
         0.3 + (80 - uniform) / 300});
}

}  // namespace

std::vector<MetricFinding> ncu_findings(const ProfileReport& r, std::size_t max) {
  std::vector<MetricFinding> f;
  if (r.kernels.empty()) return f;
  for (auto rule : {launch_overhead, coalescing, spills, bank_conflicts, occupancy, speed_of_light,
                    warp_stalls, divergence})
    rule(r, f);
  std::stable_sort(f.begin(), f.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
  if (f.size() > max) f.resize(max);
  return f;
}

std::optional<fs::path> find_ncu() {
  std::vector<fs::path> candidates;
  if (const char* e = std::getenv("KFORGE_NCU"); e && *e) candidates.emplace_back(e);
  if (const char* path = std::getenv("PATH")) {
    for (std::string_view rest = path; !rest.empty();) {
      const auto colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) candidates.push_back(fs::path(dir) / "ncu");
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    candidates.push_back(fs::path(home) / "bin/ncu");
  candidates.emplace_back("/usr/local/cuda/bin/ncu");
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec) && ::access(c.c_str(), X_OK) == 0) return c;
  }
  return std::nullopt;
}

std::optional<std::string> resolve_profiler(const std::string& requested, bool ncu_available) {
  if (requested.empty() || requested == "auto") return ncu_available ? "ncu" : "basic";
  if (requested == "none" || requested == "basic" || requested == "ncu") return requested;
  return std::nullopt;
}

}  // namespace kforge::backends
