// kforge — the command-line interface. Subcommands: suites, doctor, task, eval, import-kernelbench,
// run, merge, report, stats, compare, export, library. Exit status 2 for bad arguments (CLI11's parse errors
// included) and an unknown subcommand. Links no LibTorch, no Python, no CUDA: evaluation happens in
// kforge-runner.
#include <spdlog/spdlog.h>
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <vector>

#include "kforge/agent/doctor.hpp"
#include "kforge/agent/episode.hpp"
#include "kforge/agent/evaluation.hpp"
#include "kforge/agent/generalisation_check.hpp"
#include "kforge/agent/kernelbench_import.hpp"
#include "kforge/agent/library_verify.hpp"
#include "kforge/agent/run_options.hpp"
#include "kforge/agent/runners.hpp"
#include "kforge/agent/table_export.hpp"
#include "kforge/agent/task_command.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/benchmarks/backend_export.hpp"
#include "kforge/benchmarks/report.hpp"
#include "kforge/benchmarks/run_report.hpp"
#include "kforge/benchmarks/shapes.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/judge_stats.hpp"
#include "kforge/runs/merge.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/runs/shard.hpp"

using namespace kforge;

namespace {

std::string mib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, bytes >= 1024.0 * 1024 * 1024 ? "%.2f GiB" : "%.2f MiB",
                bytes >= 1024.0 * 1024 * 1024 ? bytes / (1024.0 * 1024 * 1024) : bytes / (1024.0 * 1024));
  return b;
}

/// `kforge suites --suite X --profile P`: each task's inputs under the profile (shapes.hpp), and
/// for a derived (scaled) profile the constants it changed and the bytes before and after.
int cmd_suite_profile(const Suite& s, const std::string& profile) {
  std::printf("suite %s, profile %s\n", s.name.c_str(), profile.c_str());
  int unknown = 0;
  for (const auto& t : s.tasks) {
    auto src = apply_profile(t, profile);
    if (!src) {
      ++unknown;
      std::printf("%-48s no profile %s: %s\n", t.id.c_str(), profile.c_str(),
                  estimate_inputs(t.source).describe().c_str());
      continue;
    }
    const ShapeEstimate e = estimate_inputs(*src);
    std::printf("%-48s %s%s\n", t.id.c_str(), e.ok ? (mib(e.bytes) + "  ").c_str() : "",
                e.describe().c_str());
    if (t.profiles.count(profile)) continue;  // the suite's own profile
    if (auto sp = scale_profile(t.source, profile)) {
      std::string changed;
      for (const auto& c : sp->changes) changed += (changed.empty() ? "" : ", ") + c;
      std::printf("  %s (was %s)%s%s\n", changed.empty() ? "unchanged" : changed.c_str(),
                  mib(sp->before.bytes).c_str(), sp->note.empty() ? "" : "; ", sp->note.c_str());
    }
  }
  if (unknown)
    std::printf(
        "\n%d task(s) without profile %s (their get_inputs() shapes are not understood; they run "
        "only at their own shapes)\n",
        unknown, profile.c_str());
  return 0;
}

int cmd_suites(const std::string& suite_arg, const std::string& profile) {
  if (suite_arg.empty()) {
    auto dirs = builtin_suite_dirs();
    if (dirs.empty()) {
      std::cerr << "kforge suites: no built-in suites under "
                << (kforge_home() / "benchmarks/suites").string()
                << " (set KFORGE_HOME to the kforge checkout)\n";
      return 2;
    }
    std::printf("%-16s %6s %11s  %s\n", "suite", "tasks", "categories", "path");
    for (const auto& d : dirs) {
      Suite s = load_suite(d);
      std::map<std::string, int> cats;
      for (const auto& t : s.tasks) cats[t.category]++;
      std::printf("%-16s %6zu %11zu  %s\n", s.name.c_str(), s.tasks.size(), cats.size(), d.string().c_str());
      for (const auto& e : s.skipped) std::printf("  skipped: %s\n", e.to_string().c_str());
    }
    return 0;
  }
  Suite s;
  try {
    s = load_suite(resolve_suite(suite_arg));
  } catch (const std::exception& e) {
    std::cerr << "kforge suites: " << e.what() << "\n";
    return 2;
  }
  if (!profile.empty()) return cmd_suite_profile(s, profile);
  std::printf("suite %s (%s layout, %zu tasks) at %s\n", s.name.c_str(), s.layout.c_str(), s.tasks.size(),
              s.root.string().c_str());
  std::printf("%-48s %-18s %s\n", "task", "category", "difficulty");
  std::map<std::string, int> cats;
  for (const auto& t : s.tasks) {
    cats[t.category.empty() ? "-" : t.category]++;
    std::printf("%-48s %-18s %s\n", t.id.c_str(), t.category.empty() ? "-" : t.category.c_str(),
                t.difficulty ? std::to_string(t.difficulty).c_str() : "-");
  }
  std::printf("\n%zu tasks;", s.tasks.size());
  for (const auto& [c, n] : cats) std::printf(" %s %d", c.c_str(), n);
  std::printf("\n");
  for (const auto& n : s.notes) std::printf("note: %s\n", n.c_str());
  if (!s.skipped.empty()) {
    std::printf("%zu skipped:\n", s.skipped.size());
    for (const auto& e : s.skipped) std::printf("  %s\n", e.to_string().c_str());
  }
  return 0;
}

/// --backend, declared once for eval and run: one of the registered backends (backend.hpp).
void add_backend_option(CLI::App* cmd, std::string& backend) {
  std::string names;
  for (const auto& n : backends::backend_names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--backend", backend, "kernel backend: " + names)
      ->check(CLI::IsMember(backends::backend_names()));
}

/// `kforge merge OUT RUN...`: the shards' runs into one (runs/merge.hpp). 0 when merged, 2 when
/// refused (the message names the field and the runs).
/// `kforge library export RUN [--as-backend DIR [--watermark V]]`: the run's library/ (as at the
/// end of a run), or its passing operator kernels as a PyTorch backend package.
int cmd_library_export(const std::string& run, const std::string& as_backend,
                       const std::optional<double>& watermark, bool include_non_generalising,
                       const agent::GeneralisationCommand& gen) {
  // Every exported kernel is judged on unseen shapes first (reused when already judged), and the
  // report is written again with the verdicts.
  const agent::GeneralisationTally g = agent::check_generalisation(gen);
  if (g.status != 0)
    std::cerr << "kforge library export: the unseen-shape check could not judge (eval exit " << g.status
              << "): those kernels are `unknown`\n";
  write_report(run);
  LibraryExport lib = export_library(run);  // the run's library/: index.json with the verdicts
  if (as_backend.empty()) {
    for (const auto& m : lib.missing) std::cerr << "kforge library export: " << m << "\n";
    std::cout << "kforge library export: " << lib.exported << " kernel(s) -> " << lib.dir.string() << " ("
              << g.yes << " generalise to unseen shapes, " << g.no << " do not, " << g.unknown
              << " unknown)\n";
    return 0;
  }
  BackendExportOptions opt;
  opt.watermark = watermark;
  opt.include_non_generalising = include_non_generalising;
  BackendExport ex = export_backend(run, as_backend, opt);
  for (const auto& m : ex.skipped) std::cerr << "kforge library export: skipped " << m << "\n";
  std::cout << "kforge library export: " << ex.exported << " operator kernel(s) -> " << ex.dir.string()
            << (watermark ? " (watermark build)" : "") << "; pip install " << ex.dir.string()
            << ", then kforge_backend.enable()\n";
  return ex.exported > 0 ? 0 : 1;
}

int cmd_merge(const std::string& out, const std::vector<std::string>& runs) {
  std::vector<std::filesystem::path> in(runs.begin(), runs.end());
  MergeResult r = merge_runs(out, in);
  for (const auto& w : r.stats.warnings) std::cerr << "kforge merge: warning: " << w << "\n";
  if (!r.ok()) {
    std::cerr << "kforge merge: " << to_string(r.error->kind)
              << (r.error->field.empty() ? "" : " (" + r.error->field + ")") << ": " << r.error->message
              << "\n";
    return 2;
  }
  std::cout << "kforge merge: " << r.stats.inputs << " run(s), " << r.stats.records_read << " records -> "
            << r.stats.attempts << " attempts in " << out << " (" << r.stats.duplicates << " duplicates, "
            << r.stats.superseded << " superseded)\n";
  if (!r.stats.missing_shards.empty()) {
    std::cerr << "kforge merge: warning: missing shard(s)";
    for (int k : r.stats.missing_shards) std::cerr << " " << k;
    std::cerr << " (their episodes are not in the merged run; `kforge run --resume " << out
              << "` runs them)\n";
  }
  return 0;
}

/// `kforge stats RUN`: the judge slots' time by phase and by slot (runs/judge_stats.hpp).
int cmd_stats(const std::string& run) {
  if (!std::filesystem::exists(std::filesystem::path(run) / "attempts.jsonl")) {
    std::cerr << "kforge stats: " << run << ": no attempts.jsonl\n";
    return 2;
  }
  const LoadedAttempts la = load_attempts(run);
  for (const auto& w : la.warnings) std::cerr << "kforge stats: warning: " << w << "\n";
  const JudgeStats st = judge_stats(la.records);
  std::cout << render_judge_stats(st);
  if (st.timed == 0)
    std::cerr << "kforge stats: no attempt has judge timing (a run made before it was recorded)\n";
  return 0;
}

/// The subcommand names of `app`, for the "unknown subcommand" message.
std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

/// The first argument that is not a top-level flag, when it names no subcommand (CLI11 would
/// say only "A subcommand is required"); nullopt otherwise.
std::optional<std::string> unknown_subcommand(int argc, char** argv, const std::vector<std::string>& names) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (!a.empty() && a[0] == '-') continue;  // -v, -q, --help: CLI11 handles them
    if (std::find(names.begin(), names.end(), a) == names.end()) return a;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  // Not dumpable: no other process of this user (a candidate host, which runs without
  // capabilities) can read this one's memory or /proc/<pid>/environ (API keys).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  CLI::App app{"kforge: LLM-written GPU kernels, compiled, tested, profiled and scored honestly"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // --help shows each option's default
  bool verbose = false, quiet = false;
  app.add_flag("-v,--verbose", verbose, "debug logging");
  app.add_flag("-q,--quiet", quiet, "warnings and errors only");

  std::string suite_arg, suites_profile;
  auto* suites = app.add_subcommand("suites", "list built-in suites, or the tasks of one suite");
  suites->add_option(
      "--suite", suite_arg,
      "a built-in suite name or a suite directory (kforge, KernelBench or MultiKernelBench layout)");
  suites->add_option("--profile", suites_profile,
                     "with --suite: each task's input shapes and bytes under this shape profile (small "
                     "and ci are derived for suites that define none)");

  agent::TaskCommand tc;
  auto* task =
      app.add_subcommand("task",
                         "print what a kernel for one task must be: the prompt's task section, tensor table, "
                         "tolerances, checks and kernel ABI");
  task->add_option("suite", tc.suite, "suite name or directory")->required();
  task->add_option("id", tc.id, "task id, e.g. level1/19_ReLU")->required();
  task->add_option("--profile", tc.profile, "shape profile (e.g. ci); default: the task's own shapes");
  add_backend_option(task, tc.backend);
  task->add_option("--device", tc.device, "runner device: cpu or cuda:N");
  task->add_option("--trials", tc.trials, "correctness trials the checks state")->check(CLI::Range(1, 100));

  app.add_subcommand("doctor", "report compilers, GPUs, LibTorch/torch/Triton versions and usable backends");

  agent::EvalCommand ev;
  auto* eval = app.add_subcommand(
      "eval",
      "evaluate existing kernels DIR/<task-id>/kernel.{cpp,cu} (or, several samples per task, "
      "DIR/<task-id>/<sample>/kernel.{cpp,cu}) against a suite and report pass@k (no LLM)");
  // The options eval shares with run come from run's one table (run_options.hpp); these are its own.
  agent::RunCommand ev_shared;
  agent::add_eval_options(*eval, ev_shared);
  eval->add_option("--kernels", ev.kernels,
                   "directory of kernels, one folder per task id (a sample per numbered subfolder)")
      ->required();
  eval->add_option("--out", ev.out, "run directory to write (attempts.jsonl, per-attempt files)")->required();
  eval->add_option("--arch", ev.arch, "CUDA target such as sm_90a (default: from the device)");
  eval->add_option("--jobs", ev.jobs,
                   "kernels compiled and scanned at once while each judge runner takes one kernel at a "
                   "time (default 1: no compile beside a timed run)")
      ->check(CLI::Range(1, 1024));

  agent::RunCommand rn;
  auto* run = app.add_subcommand(
      "run", "the agent loop: an LLM writes kernels for a suite, turn by turn with feedback");
  agent::add_run_options(*run, rn);  // the one table of run options (run_options.hpp)

  agent::ImportCommand im;
  auto* import_kb = app.add_subcommand(
      "import-kernelbench",
      "turn KernelBench generations (level_<L>_problem_<P>_sample_<S>_kernel.py, ModelNew with load_inline) "
      "into cuda kernels OUT/<task-id>/<S>/kernel.cu for `kforge eval --backend cuda`");
  import_kb->add_option("--suite", im.suite, "the KernelBench suite (root or level<N>/ folder)")->required();
  import_kb->add_option("--generations", im.generations, "folder of KernelBench's generated kernels")
      ->required();
  import_kb->add_option("--out", im.out, "kernels folder to write")->required();

  std::string merge_out;
  std::vector<std::string> merge_in;
  auto* merge = app.add_subcommand(
      "merge", "merge the runs of `kforge run --shard K/N` into one run (then `kforge report OUT`)");
  merge->add_option("out", merge_out, "the merged run directory to create")->required();
  merge->add_option("runs", merge_in, "the shards' run directories")->required();

  std::string lib_run, lib_backend;
  std::optional<double> lib_watermark;
  auto* library = app.add_subcommand("library", "a run's kernel library");
  auto* lib_export = library->add_subcommand("export",
                                             "write the run's library/ again, or with --as-backend its "
                                             "operator kernels as a PyTorch backend package");
  lib_export->add_option("run_dir", lib_run, "run directory")->required();
  lib_export->add_option(
      "--as-backend", lib_backend,
      "write an installable Python package registering every passing operator kernel through "
      "torch.library");
  lib_export->add_option(
      "--watermark", lib_watermark,
      "(with --as-backend) a watermark build: every kernel writes this value (routing test)");
  bool lib_include_non_gen = false;
  lib_export->add_flag("--include-non-generalising", lib_include_non_gen,
                       "(with --as-backend) also export kernels not shown to generalise to unseen shapes");
  agent::GeneralisationCommand lib_gen;
  lib_export->add_option("--device", lib_gen.device,
                         "runner device of the unseen-shape check: cpu or cuda:N (default: the run's)");
  lib_export->add_flag("--judge-again", lib_gen.again,
                       "judge every kernel on unseen shapes again, even when a verdict for it exists");
  agent::VerifyCommand vf;
  auto* lib_verify = library->add_subcommand(
      "verify",
      "judge every kernel of an exported backend package again here, as it is; record the ones the "
      "package may load");
  lib_verify->add_option("dir", vf.dir, "the package directory (kforge library export --as-backend DIR)")
      ->required();
  lib_verify->add_option("--device", vf.device, "runner device: cpu or cuda:N (default: the manifest's)");
  lib_verify->add_flag("--bench", vf.bench, "time the kernels again (speedups recorded)");
  lib_verify->add_option("--reps", vf.reps, "timed repetitions at most")->check(CLI::Range(1, 100000));
  lib_verify->add_option("--records", vf.records,
                         "where the records of the passing kernels go, the ones the package loads "
                         "(default: $KFORGE_VERIFIED_DIR, else $XDG_DATA_HOME/kforge/verified)");
  library->require_subcommand(1);

  agent::ExportCommand xc;
  auto* table_export = app.add_subcommand(
      "export", "a run's attempts as one flat table, one row per attempt (docs/tables.md)");
  table_export->add_option("run_dir", xc.run, "run directory")->required();
  table_export->add_option("--format", xc.format, "csv, or parquet (pandas and pyarrow in the venv)")
      ->check(CLI::IsMember({"csv", "parquet"}));
  table_export->add_option("--out", xc.out,
                           "the file to write (default: RUN/attempts.<format>; - for stdout, csv)");

  std::string report_dir;
  auto* report = app.add_subcommand(
      "report", "regenerate summary.json, report.md and report.html of a run, and print report.md");
  report->add_option("run_dir", report_dir, "run directory")->required();
  std::string stats_dir;
  auto* stats = app.add_subcommand(
      "stats", "where a run's judge slots spent their time: total per phase, busy fraction per slot");
  stats->add_option("run_dir", stats_dir, "run directory")->required();
  std::string cmp_a, cmp_b;
  auto* compare = app.add_subcommand(
      "compare", "compare two runs on the tasks both attempted; prints the tables and writes compare.html");
  compare->add_option("run_a", cmp_a, "first run directory")->required();
  compare->add_option("run_b", cmp_b, "second run directory")->required();
  std::string cmp_html, cmp_out;
  auto* cmp_html_opt =
      compare->add_option("--html", cmp_html, "where to write the page (\"\" for none; default: see --out)");
  compare->add_option("--out", cmp_out,
                      "folder for compare.html (default: beside the runs, "
                      "<parent of run_a>/compare-<run_a>-vs-<run_b>.html)");

  if (auto bad = unknown_subcommand(argc, argv, subcommand_names(app))) {
    std::string known;
    for (const auto& n : subcommand_names(app)) known += (known.empty() ? "" : ", ") + n;
    std::cerr << "kforge: unknown subcommand '" << *bad << "' (known: " << known
              << "; kforge --help describes them)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with status 0; every other parse error is a bad
    // argument: exit 2 as README says (CLI11's own codes are 100 and up).
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  setup_logging(verbose, quiet);
  try {
    if (suites->parsed()) return cmd_suites(suite_arg, suites_profile);
    if (task->parsed()) return agent::run_task_command(tc);
    if (app.got_subcommand("doctor")) {
      std::cout << agent::render_doctor(agent::run_doctor());
      return 0;
    }
    if (eval->parsed()) {
      agent::copy_eval_options(ev_shared, ev);
      return agent::run_eval(ev);
    }
    if (run->parsed()) {
      if (rn.resume.empty() && (rn.suite.empty() || rn.llm.empty() || rn.out.empty())) {
        std::cerr << "kforge run: --suite, --llm and --out are required (or --resume RUN_DIR)\n";
        return 2;
      }
      rn.given = agent::given_run_options(*run);
      return agent::run_agent(rn);
    }
    if (import_kb->parsed()) return agent::run_import_kernelbench(im);
    if (merge->parsed()) return cmd_merge(merge_out, merge_in);
    if (lib_export->parsed()) {
      lib_gen.run_dir = lib_run;
      return cmd_library_export(lib_run, lib_backend, lib_watermark, lib_include_non_gen, lib_gen);
    }
    if (lib_verify->parsed()) return agent::run_library_verify(vf);
    if (report->parsed()) return agent::run_report(report_dir);
    if (stats->parsed()) return cmd_stats(stats_dir);
    if (table_export->parsed()) return agent::run_export(xc);
    if (compare->parsed()) {
      if (cmp_html_opt->count() && !cmp_out.empty()) {
        std::cerr << "kforge compare: --html and --out both given: give one\n";
        return 2;
      }
      return agent::run_compare(cmp_a, cmp_b,
                                cmp_html_opt->count() ? std::filesystem::path(cmp_html)
                                                      : agent::compare_page_path(cmp_a, cmp_b, cmp_out));
    }
  } catch (const std::exception& e) {
    std::cerr << "kforge: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
