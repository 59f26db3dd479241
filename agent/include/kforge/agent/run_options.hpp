#pragma once
// The options of `kforge run`, declared once (issue 20). One table, run_options(), holds every
// option: its command-line flag, its help, the RunCommand field it sets (whose initializer is
// its default), how it is written to and read from the manifest's "config" object, and what a
// resume does with it (ResumeRule). The three uses derive from the table: the CLI
// (add_run_options, given_run_options), the manifest (run_config_json) and --resume
// (resume_run_config, which restores every recorded option the command line does not give and
// refuses, naming the option, a given value that would change the run's results). Adding an
// option is a RunCommand field and one line of the table (run_options.cpp).
//
// The table is built once and never changes: reading it is thread-safe. The functions are pure
// but for the RunCommand / CLI::App they are handed (the caller's, not kept).
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kforge/agent/run_command.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kforge::agent {

/// What `--resume` does with an option.
enum class ResumeRule {
  not_recorded,  ///< where the run lives (--out, --resume): not in the manifest
  free,          ///< operational (endpoint, concurrency, limits): restored; the command line may change it
  same,          ///< changes results: restored; a different value on the command line is refused
  grow,          ///< samples, turns: restored; the command line may raise it, not lower it
};

/// Facts of the started run that the manifest records beside the options (the suite's name and
/// root, resolved from --suite).
struct RunFacts {
  std::string suite_name, suite_root;
};

/// One option of `kforge run`: one row of the table.
struct RunOption {
  std::string flag;  ///< CLI11 name: "--turns"; "!--no-bench" for a flag that sets false
  std::string key;   ///< the manifest config key and RunCommand::given name: "turns", "bench"
  ResumeRule rule = ResumeRule::same;
  /// A valid non-default command-line value ("" for a flag): the tests round-trip every option
  /// with it.
  std::string example;
  std::string help;
  /// Declares the option on `app`, bound to cmd's field.
  std::function<CLI::Option*(CLI::App& app, RunCommand& cmd)> add;
  /// The option's value in cmd, as JSON (comparable: the suite as its resolved root).
  std::function<nlohmann::json(const RunCommand& cmd)> value;
  /// Writes the option to the manifest's config object.
  std::function<void(const RunCommand& cmd, const RunFacts& facts, nlohmann::json& config)> write;
  /// Reads the option back from a config object that holds it (non-null config[key]); throws
  /// std::runtime_error (its text names config.<key>) when the value has the wrong type.
  std::function<void(const nlohmann::json& config, RunCommand& cmd)> read;
};

/// The table: every option of `kforge run`, in --help order.
const std::vector<RunOption>& run_options();

/// Declares every option of the table on `run` (the `kforge run` subcommand), bound to `cmd`.
void add_run_options(CLI::App& run, RunCommand& cmd);

/// The keys of the table's options that the parsed command line gave (RunCommand::given).
std::set<std::string> given_run_options(const CLI::App& run);

/// The table's options `kforge eval` has too (how kernels are judged: suite, backend, profile,
/// trials, reps, bench, baseline, devices, profiler, ...), in table order. Eval declares them
/// from the table (add_eval_options), so each is declared once with one flag, help, check and
/// resume rule; eval's own options (--kernels, --out, --arch, --jobs) are not in the table.
const std::vector<std::string>& eval_option_keys();

/// Declares the rows of eval_option_keys() on `eval` (the `kforge eval` subcommand), bound to
/// `shared`'s fields; --suite is required. copy_eval_options moves the parsed values into eval's
/// command.
void add_eval_options(CLI::App& eval, RunCommand& shared);

/// Sets every field of `ev` that eval_option_keys() names from `shared`.
void copy_eval_options(const RunCommand& shared, EvalCommand& ev);

/// The manifest's "config": every recorded option of the table.
nlohmann::json run_config_json(const RunCommand& cmd, const RunFacts& facts);

/// The manifest's "option_rules": each recorded option's key and ResumeRule ("free", "same",
/// "grow"); `kforge merge` lets shards differ in the free ones.
nlohmann::json run_option_rules();

/// Why a resume refuses the recorded configuration.
struct ResumeError {
  enum class Kind {
    bad_value,  ///< a recorded value has the wrong type or form
    conflict,   ///< the command line gives a value that would change the run's results
  };
  Kind kind = Kind::conflict;
  std::string option;  ///< the flag, e.g. "--trials"
  std::string message;
};

/// --resume: takes every option recorded in `config` that cmd.given does not hold; a given
/// option whose value conflicts with the recorded one (ResumeRule same: differs; grow: lower)
/// is refused. Options the config lacks (a run recorded before they existed) keep cmd's value.
std::optional<ResumeError> resume_run_config(const nlohmann::json& config, RunCommand& cmd);

}  // namespace kforge::agent
