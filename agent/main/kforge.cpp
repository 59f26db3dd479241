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
  for (const std::string& name : backends::backend_names())
    if (const backends::Backend* b = backends::find_backend(name))
      opt.backends[name] = {b->artifact_kind() == backends::ArtifactKind::shared_object
                                ? PackageKernelKind::shared_object
                                : PackageKernelKind::python_module,
                            b->device_type()};
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

/// Every subcommand's CLI11 handle and the arguments it parses into: the CLI's one owner of
/// them, filled by the declare_* functions and read by dispatch(). Not copyable (CLI11 keeps
/// pointers into it).
struct Cli {
  CLI::App app{"kforge: LLM-written GPU kernels, compiled, tested, profiled and scored honestly"};
  bool verbose = false, quiet = false;
  CLI::App* suites = nullptr;
  std::string suite_arg, suites_profile;
  CLI::App* task = nullptr;
  agent::TaskCommand tc;
  CLI::App* eval = nullptr;
  agent::EvalCommand ev;
  agent::RunCommand ev_shared;  // the options eval shares with run, from run's one table
  CLI::App* run = nullptr;
  agent::RunCommand rn;
  CLI::App* import_kb = nullptr;
  agent::ImportCommand im;
  CLI::App* merge = nullptr;
  std::string merge_out;
  std::vector<std::string> merge_in;
  CLI::App* lib_export = nullptr;
  std::string lib_run, lib_backend;
  std::optional<double> lib_watermark;
  bool lib_include_non_gen = false;
  agent::GeneralisationCommand lib_gen;
  CLI::App* lib_verify = nullptr;
  agent::VerifyCommand vf;
  CLI::App* table_export = nullptr;
  agent::ExportCommand xc;
  CLI::App* report = nullptr;
  std::string report_dir;
  CLI::App* stats = nullptr;
  std::string stats_dir;
  CLI::App* compare = nullptr;
  CLI::Option* cmp_html_opt = nullptr;
  std::string cmp_a, cmp_b, cmp_html, cmp_out;
};

/// suites, task, doctor: what kforge and its suites hold.
void declare_inspection(Cli& c) {
  c.suites = c.app.add_subcommand("suites", "list built-in suites, or the tasks of one suite");
  c.suites->add_option(
      "--suite", c.suite_arg,
      "a built-in suite name or a suite directory (kforge, KernelBench or MultiKernelBench layout)");
  c.suites->add_option("--profile", c.suites_profile,
                       "with --suite: each task's input shapes and bytes under this shape profile (small "
                       "and ci are derived for suites that define none)");
  c.task = c.app.add_subcommand("task",
                                "print what a kernel for one task must be: the prompt's task section, tensor "
                                "table, tolerances, checks and kernel ABI");
  c.task->add_option("suite", c.tc.suite, "suite name or directory")->required();
  c.task->add_option("id", c.tc.id, "task id, e.g. level1/19_ReLU")->required();
  c.task->add_option("--profile", c.tc.profile, "shape profile (e.g. ci); default: the task's own shapes");
  add_backend_option(c.task, c.tc.backend);
  c.task->add_option("--device", c.tc.device, "runner device: cpu or cuda:N");
  c.task->add_option("--trials", c.tc.trials, "correctness trials the checks state")
      ->check(CLI::Range(1, 100));
  c.app.add_subcommand("doctor",
                       "report compilers, GPUs, LibTorch/torch/Triton versions and usable backends");
}

/// eval, run, import-kernelbench, merge: kernels judged, written, imported, and runs merged.
void declare_runs(Cli& c) {
  c.eval = c.app.add_subcommand(
      "eval",
      "evaluate existing kernels DIR/<task-id>/kernel.{cpp,cu} (or, several samples per task, "
      "DIR/<task-id>/<sample>/kernel.{cpp,cu}) against a suite and report pass@k (no LLM)");
  // The options eval shares with run come from run's one table (run_options.hpp); these are its own.
  agent::add_eval_options(*c.eval, c.ev_shared);
  c.eval
      ->add_option("--kernels", c.ev.kernels,
                   "directory of kernels, one folder per task id (a sample per numbered subfolder)")
      ->required();
  c.eval->add_option("--out", c.ev.out, "run directory to write (attempts.jsonl, per-attempt files)")
      ->required();
  c.eval->add_option("--arch", c.ev.arch, "CUDA target such as sm_90a (default: from the device)");
  c.eval
      ->add_option("--jobs", c.ev.jobs,
                   "kernels compiled and scanned at once while each judge runner takes one kernel at a "
                   "time (default 1: no compile beside a timed run)")
      ->check(CLI::Range(1, 1024));
  c.run = c.app.add_subcommand(
      "run", "the agent loop: an LLM writes kernels for a suite, turn by turn with feedback");
  agent::add_run_options(*c.run, c.rn);  // the one table of run options (run_options.hpp)
  c.import_kb = c.app.add_subcommand(
      "import-kernelbench",
      "turn KernelBench generations (level_<L>_problem_<P>_sample_<S>_kernel.py, ModelNew with load_inline) "
      "into cuda kernels OUT/<task-id>/<S>/kernel.cu for `kforge eval --backend cuda`");
  c.import_kb->add_option("--suite", c.im.suite, "the KernelBench suite (root or level<N>/ folder)")
      ->required();
  c.import_kb->add_option("--generations", c.im.generations, "folder of KernelBench's generated kernels")
      ->required();
  c.import_kb->add_option("--out", c.im.out, "kernels folder to write")->required();
  c.merge = c.app.add_subcommand(
      "merge", "merge the runs of `kforge run --shard K/N` into one run (then `kforge report OUT`)");
  c.merge->add_option("out", c.merge_out, "the merged run directory to create")->required();
  c.merge->add_option("runs", c.merge_in, "the shards' run directories")->required();
}

/// library export, library verify: a run's kernel library.
void declare_library(Cli& c) {
  auto* library = c.app.add_subcommand("library", "a run's kernel library");
  c.lib_export = library->add_subcommand("export",
                                         "write the run's library/ again, or with --as-backend its "
                                         "operator kernels as a PyTorch backend package");
  c.lib_export->add_option("run_dir", c.lib_run, "run directory")->required();
  c.lib_export->add_option("--as-backend", c.lib_backend,
                           "write an installable Python package registering every passing operator kernel "
                           "through torch.library");
  c.lib_export->add_option(
      "--watermark", c.lib_watermark,
      "(with --as-backend) a watermark build: every kernel writes this value (routing test)");
  c.lib_export->add_flag("--include-non-generalising", c.lib_include_non_gen,
                         "(with --as-backend) also export kernels not shown to generalise to unseen shapes");
  c.lib_export->add_option("--device", c.lib_gen.device,
                           "runner device of the unseen-shape check: cpu or cuda:N (default: the run's)");
  c.lib_export->add_flag("--judge-again", c.lib_gen.again,
                         "judge every kernel on unseen shapes again, even when a verdict for it exists");
  c.lib_verify = library->add_subcommand(
      "verify",
      "judge every kernel of an exported backend package again here, as it is; record the ones the "
      "package may load");
  c.lib_verify->add_option("dir", c.vf.dir, "the package directory (kforge library export --as-backend DIR)")
      ->required();
  c.lib_verify->add_option("--device", c.vf.device, "runner device: cpu or cuda:N (default: the manifest's)");
  c.lib_verify->add_flag("--bench", c.vf.bench, "time the kernels again (speedups recorded)");
  c.lib_verify->add_option("--reps", c.vf.reps, "timed repetitions at most")->check(CLI::Range(1, 100000));
  c.lib_verify->add_option("--records", c.vf.records,
                           "where the records of the passing kernels go, the ones the package loads "
                           "(default: $KFORGE_VERIFIED_DIR, else $XDG_DATA_HOME/kforge/verified)");
  library->require_subcommand(1);
}

/// export, report, stats, compare: what a run found.
void declare_reports(Cli& c) {
  c.table_export = c.app.add_subcommand(
      "export", "a run's attempts as one flat table, one row per attempt (docs/tables.md)");
  c.table_export->add_option("run_dir", c.xc.run, "run directory")->required();
  c.table_export->add_option("--format", c.xc.format, "csv, or parquet (pandas and pyarrow in the venv)")
      ->check(CLI::IsMember({"csv", "parquet"}));
  c.table_export->add_option("--out", c.xc.out,
                             "the file to write (default: RUN/attempts.<format>; - for stdout, csv)");
  c.report = c.app.add_subcommand(
      "report", "regenerate summary.json, report.md and report.html of a run, and print report.md");
  c.report->add_option("run_dir", c.report_dir, "run directory")->required();
  c.stats = c.app.add_subcommand(
      "stats", "where a run's judge slots spent their time: total per phase, busy fraction per slot");
  c.stats->add_option("run_dir", c.stats_dir, "run directory")->required();
  c.compare = c.app.add_subcommand(
      "compare", "compare two runs on the tasks both attempted; prints the tables and writes compare.html");
  c.compare->add_option("run_a", c.cmp_a, "first run directory")->required();
  c.compare->add_option("run_b", c.cmp_b, "second run directory")->required();
  c.cmp_html_opt = c.compare->add_option("--html", c.cmp_html,
                                         "where to write the page (\"\" for none; default: see --out)");
  c.compare->add_option("--out", c.cmp_out,
                        "folder for compare.html (default: beside the runs, "
                        "<parent of run_a>/compare-<run_a>-vs-<run_b>.html)");
}

/// Runs the parsed subcommand: its exit status.
int dispatch(Cli& c) {
  if (c.suites->parsed()) return cmd_suites(c.suite_arg, c.suites_profile);
  if (c.task->parsed()) return agent::run_task_command(c.tc);
  if (c.app.got_subcommand("doctor")) {
    std::cout << agent::render_doctor(agent::run_doctor());
    return 0;
  }
  if (c.eval->parsed()) {
    agent::copy_eval_options(c.ev_shared, c.ev);
    return agent::run_eval(c.ev);
  }
  if (c.run->parsed()) {
    if (c.rn.resume.empty() && (c.rn.suite.empty() || c.rn.llm.empty() || c.rn.out.empty())) {
      std::cerr << "kforge run: --suite, --llm and --out are required (or --resume RUN_DIR)\n";
      return 2;
    }
    c.rn.given = agent::given_run_options(*c.run);
    return agent::run_agent(c.rn);
  }
  if (c.import_kb->parsed()) return agent::run_import_kernelbench(c.im);
  if (c.merge->parsed()) return cmd_merge(c.merge_out, c.merge_in);
  if (c.lib_export->parsed()) {
    c.lib_gen.run_dir = c.lib_run;
    return cmd_library_export(c.lib_run, c.lib_backend, c.lib_watermark, c.lib_include_non_gen, c.lib_gen);
  }
  if (c.lib_verify->parsed()) return agent::run_library_verify(c.vf);
  if (c.report->parsed()) return agent::run_report(c.report_dir);
  if (c.stats->parsed()) return cmd_stats(c.stats_dir);
  if (c.table_export->parsed()) return agent::run_export(c.xc);
  if (c.compare->parsed()) {
    if (c.cmp_html_opt->count() && !c.cmp_out.empty()) {
      std::cerr << "kforge compare: --html and --out both given: give one\n";
      return 2;
    }
    return agent::run_compare(c.cmp_a, c.cmp_b,
                              c.cmp_html_opt->count()
                                  ? std::filesystem::path(c.cmp_html)
                                  : agent::compare_page_path(c.cmp_a, c.cmp_b, c.cmp_out));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Not dumpable: no other process of this user (a candidate host, which runs without
  // capabilities) can read this one's memory or /proc/<pid>/environ (API keys).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  Cli c;
  c.app.require_subcommand(1);
  c.app.option_defaults()->always_capture_default();  // --help shows each option's default
  c.app.add_flag("-v,--verbose", c.verbose, "debug logging");
  c.app.add_flag("-q,--quiet", c.quiet, "warnings and errors only");
  declare_inspection(c);
  declare_runs(c);
  declare_library(c);
  declare_reports(c);
  if (auto bad = unknown_subcommand(argc, argv, subcommand_names(c.app))) {
    std::string known;
    for (const auto& n : subcommand_names(c.app)) known += (known.empty() ? "" : ", ") + n;
    std::cerr << "kforge: unknown subcommand '" << *bad << "' (known: " << known
              << "; kforge --help describes them)\n";
    return 2;
  }
  try {
    c.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with status 0; every other parse error is a bad
    // argument: exit 2 as README says (CLI11's own codes are 100 and up).
    const int rc = c.app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  setup_logging(c.verbose, c.quiet);
  try {
    return dispatch(c);
  } catch (const std::exception& e) {
    std::cerr << "kforge: " << e.what() << "\n";
    return 1;
  }
}
