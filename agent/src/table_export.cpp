// agent/src/table_export.cpp — `kforge export` (table_export.hpp).
#include "kforge/agent/table_export.hpp"

#include <cstdlib>
#include <iostream>

#include "kforge/agent/run_exit.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/backends/compile.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/attempt_table.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace fs = std::filesystem;

namespace kforge::agent {

namespace {

/// The interpreter with pandas: $KFORGE_PYTHON, else the Python backend's (backends::torch_python:
/// the venv's), else python3.
std::string python() {
  if (const char* env = std::getenv("KFORGE_PYTHON"); env && *env) return env;
  if (auto p = backends::torch_python()) return p->string();
  return "python3";
}

int write_parquet(const ExportCommand& cmd, const fs::path& out) {
  sandbox::Spec spec;
  spec.argv = {
      python(), "-m", "kforge", "parquet", fs::absolute(cmd.run).string(), fs::absolute(out).string()};
  spec.env_set["PYTHONPATH"] = (kforge_home() / "python").string();
  spec.limits.wall = std::chrono::minutes(10);
  const auto res = sandbox::run(spec);
  if (res.ok()) return 0;
  std::cerr << res.err << (res.error.empty() ? "" : res.error + "\n");
  if (res.status == sandbox::Status::exited && res.exit_code == 3) return 2;  // no pandas/pyarrow: said why
  std::cerr << "kforge export: " << spec.argv[0] << " -m kforge parquet failed ("
            << sandbox::to_string(res.status) << ", exit " << res.exit_code << ")\n";
  return kExitInfraError;
}

}  // namespace

int run_export(const ExportCommand& cmd) {
  if (!fs::is_regular_file(cmd.run / "attempts.jsonl")) {
    std::cerr << "kforge export: " << cmd.run.string() << ": no attempts.jsonl (not a run directory)\n";
    return 2;
  }
  if (cmd.format == "parquet" && cmd.out == "-") {
    std::cerr << "kforge export: --out -: Parquet is written to a file, not to standard output\n";
    return 2;
  }
  const fs::path out = cmd.out.empty() ? cmd.run / ("attempts." + cmd.format) : cmd.out;
  LoadedAttempts loaded;
  try {
    loaded = load_attempts(cmd.run);
  } catch (const RecordError& e) {
    std::cerr << "kforge export: " << e.what() << "\n";
    return 2;
  }
  for (const auto& w : loaded.warnings) std::cerr << "kforge export: " << w << "\n";
  if (cmd.format == "parquet") {
    if (int rc = write_parquet(cmd, out)) return rc;
  } else if (out == "-") {
    std::cout << attempts_csv(loaded.records);
    return 0;
  } else {
    write_file(out, attempts_csv(loaded.records));
  }
  std::cerr << "kforge export: " << loaded.records.size() << " attempt(s), " << attempt_columns().size()
            << " columns -> " << out.string() << "\n";
  return 0;
}

}  // namespace kforge::agent
