// kforge/benchmarks/task.hpp — the task model and the suite loaders (docs/suites.md).
//
// A Task is one KernelBench-format Python file (class Model, get_inputs(),
// get_init_inputs(), module-level size constants) plus the metadata a suite gives it.
// Suites load from a directory in one of these layouts, detected automatically:
//   kforge      — a suite.json manifest lists the tasks (category, difficulty, tolerances,
//                 FLOP/byte formulas, shape profiles);
//   kernelbench — level<N>/<id>_<Name>.py, task id "level<N>/<id>_<Name>", difficulty N;
//   multikernelbench — reference/<category>/<op>.py (or the reference/ folder itself),
//                 task id "<category>/<op>", category from the folder name;
//   tritonbench — a TritonBench checkout (data/TritonBench_{T,G}_v1/, or data/ or one of those
//                 folders given itself): task ids "T/<stem>" and "G/<stem>", each file split at
//                 its separator line of 146 '#' into the reference (source) and the test block
//                 (test_source); difficulty from data/TritonBench_T_v1.jsonl and
//                 data/TritonBench_G_v1.json.
// Loading is pure file parsing (no Python): it runs in the CLI. A broken task file or
// manifest entry is recorded in Suite::skipped with the file and field; the rest loads.
// Values are plain data; functions are thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/benchmarks/operator_case.hpp"

namespace kforge {

/// The 14 categories of MultiKernelBench, in its order.
const std::vector<std::string>& known_categories();

/// The category a MultiKernelBench `reference/<folder>/` stands for: MultiKernelBench's own
/// folder names `arch` and `fuse` (its dataset.py) are full_architecture and fusion; a known
/// category maps to itself; any other folder name is returned unchanged (a category outside
/// the 14, such as `attention`).
std::string category_of_folder(const std::string& folder);

/// The category of a KernelBench task, inferred (KernelBench names none): level 2 is fusion,
/// levels 3 and 4 full_architecture; a level-1 file by keywords of its name, the way
/// MultiKernelBench sorted these operators ("19_ReLU" -> activation, "54_conv_standard_3D..." ->
/// convolution, "89_cumsum" -> math). "" when no rule matches (e.g. ScaledDotProductAttention).
std::string kernelbench_category(int level, const std::string& file_stem);

/// Natural order of task ids: digit runs compare as numbers, so "level1/2_x" < "level1/10_y".
bool natural_less(const std::string& a, const std::string& b);

/// Absolute and relative tolerance for one dtype: |a - e| <= atol + rtol * |e|.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

/// The tolerance for a dtype name ("float32", "float16", "bfloat16", "float64", ...):
/// KernelBench's defaults (fp32 1e-4, fp16/bf16 1e-2, fp64 1e-8; integers and bool exact).
Tolerance default_tolerance(const std::string& dtype);

/// A top-level constant of the module: `NAME = <expr>` on one line at column 0.
struct ModuleConstant {
  std::string name;
  std::string expr;  ///< the right-hand side as written, e.g. "4096" or "(16, 3, 224, 224)"
  int line = 0;      ///< 1-based line number in the file
};

/// What a task file is, and so what a candidate must provide.
enum class TaskFormat {
  kernelbench,    ///< class Model, get_inputs(), get_init_inputs(); the candidate provides kf_forward
  tritonbench_t,  ///< TritonBench-T: a PyTorch reference function; the candidate defines the same function
  tritonbench_g,  ///< TritonBench-G: a gold Triton implementation is the reference; the candidate defines
                  ///< the names its test block uses
  aten_operator,  ///< an ATen overload and its input cases (operators.hpp): source is a generated
                  ///< KernelBench module calling it on every case; the candidate defines
                  ///< `<op>_kernel_impl` (entries), kforge appends the kf_forward over the cases
};
/// "kernelbench", "tritonbench_t", "tritonbench_g", "aten_operator".
const char* to_string(TaskFormat f);

/// TritonBench's separator between an implementation and its test block: a line of 146 '#'.
const std::string& tritonbench_separator();

struct Task {
  TaskFormat format = TaskFormat::kernelbench;
  std::string id;              ///< unique within its suite, e.g. "level1/19_ReLU", "activation/gelu"
  std::string category;        ///< usually one of known_categories(); "" when the layout gives none
  int difficulty = 0;          ///< 1..5; 0 when unknown
  std::filesystem::path file;  ///< absolute path of the .py file
  std::string source;          ///< the Python source, unmodified
  std::vector<ModuleConstant> constants;
  /// profile name -> constant name -> Python expression replacing the constant.
  std::map<std::string, std::map<std::string, std::string>> profiles;
  /// dtype name -> tolerance; overrides default_tolerance for that dtype ("*" for all).
  std::map<std::string, Tolerance> tolerances;
  std::string flops;  ///< Python expression over the constants giving FLOP per call; "" if none
  std::string bytes;  ///< Python expression giving the minimum bytes moved per call; "" if none
  std::string description;
  /// TritonBench: the names the candidate must define. T: the reference function (the file's
  /// stem, or the one function the test block calls); G: every top-level name of the gold
  /// implementation that the test block uses. Empty for kernelbench tasks.
  std::vector<std::string> entries;
  std::string test_source;    ///< TritonBench: the test block after the separator, unmodified
  std::string test_function;  ///< TritonBench: the test block's top-level `def test_*()`
  /// TritonBench: the task's performance script (performance_metrics/perf_<T|G>/golden_metrics/
  /// <name>_perf.py in the checkout), what its Speed Up is timed on (backends/tritonbench_perf.hpp);
  /// "" when the checkout has none for it.
  std::string perf_script;
  /// TritonBench-T: the entry's signature as its instruction states it (the stats file's
  /// `func_inputs`, e.g. "relu_scale(input, scale=2.0, out=None) -> Tensor"); "" when not given.
  std::string signature;
  /// How the reference Model runs: "train" (nn.Module's default training mode: BatchNorm uses
  /// batch statistics, Dropout is live) or "eval" (after .eval()). A property of the suite:
  /// KernelBench and MultiKernelBench run Model(*get_init_inputs()) without .eval() under
  /// torch.no_grad, as their own harnesses do, so their tasks are "train"; a kforge suite declares
  /// it per task ("module_mode" in suite.json, or a suite-wide "module_mode"), default "eval".
  std::string module_mode = "eval";
  /// Lower-precision math the reference itself uses, so a candidate may too (docs/judge.md): "tf32"
  /// where PyTorch runs the reference through cuDNN convolutions (torch.backends.cudnn.allow_tf32
  /// is True by default; fp32 matmuls do not allow TF32). kforge suites declare it
  /// ("allow_precision": ["tf32"]); KernelBench and MultiKernelBench tasks whose source calls
  /// nn.ConvNd / F.convNd / nn.ConvTransposeNd get "tf32".
  std::vector<std::string> allow_precision;
  /// (triton) ATen ops a candidate may run besides allocation, views and copies, e.g. "mm" for
  /// a fusion that keeps its GEMM in cuBLAS ("allow_ops": ["mm"]); others are torch_fallback.
  std::vector<std::string> allow_ops;
  /// aten_operator: the overload ("aten.add.Tensor") and its cases (every one must pass).
  std::string aten_op;
  std::vector<OperatorCase> cases;

  /// The tolerance this task uses for a dtype (task override, else "*" override, else default).
  Tolerance tolerance_for(const std::string& dtype) const;
};

/// A problem found while loading; the offending task is skipped, the rest loads.
struct LoadError {
  std::filesystem::path file;  ///< the file that is wrong (task file or suite.json)
  std::string field;           ///< the field or construct at fault, e.g. "tasks[3].difficulty"
  std::string message;
  std::string to_string() const;  ///< "<file>: <field>: <message>"
};

struct Suite {
  std::string name;
  std::filesystem::path root;
  std::string layout;  ///< "kforge", "kernelbench", "multikernelbench", "tritonbench" or "operators"
  std::string description;
  std::vector<Task> tasks;  ///< sorted by id (natural_less)
  std::vector<LoadError> skipped;
  std::vector<std::string> notes;  ///< things worth knowing that skipped nothing

  const Task* find(const std::string& id) const;
};

/// Loads a suite from a directory, detecting its layout: a kforge suite (suite.json), a
/// KernelBench root (level<N>/ folders) or one level<N> folder itself, a MultiKernelBench root
/// (reference/) or its reference/ folder, a TritonBench checkout (data/TritonBench_T_v1/,
/// data/TritonBench_G_v1/), its data/ folder or one channel folder, or an operator suite (a
/// BackendBench trace file, or a directory holding `operators.txt`). Throws std::runtime_error when the
/// directory does not exist or matches no layout, and when any task's id is not a valid task id
/// (common/task_id.hpp; the message names the file, and for suite.json the field tasks[i].id):
/// ids name the folders kforge writes. Other per-task problems go to skipped.
Suite load_suite(const std::filesystem::path& dir);

/// Parses one KernelBench-format task file. Returns the error instead when the file lacks
/// `class Model`, `def get_inputs` or `def get_init_inputs`, or cannot be read.
struct TaskFileResult {
  std::optional<Task> task;
  std::optional<LoadError> error;
};
TaskFileResult parse_task_file(const std::filesystem::path& file, const std::string& id);

/// Parses one TritonBench file of a channel (format tritonbench_t or tritonbench_g): splits it
/// at the separator, finds the entries and the test function. Returns the error instead when
/// the file cannot be read, has no separator or more than one, its test block defines no
/// `test_*` function, the entry cannot be told (T), the test block redefines the entry and
/// would override the candidate (T files before TritonBench's leakage fix 46c3b97), or the
/// test block uses no name of the implementation (G). Difficulty and category are left unset.
TaskFileResult parse_tritonbench_file(const std::filesystem::path& file, const std::string& id,
                                      TaskFormat format);

/// The source with a profile's overrides applied: each overridden top-level assignment
/// `NAME = ...` is replaced by `NAME = <override>` on the same line, so constants derived
/// from it later in the file follow. An empty profile name or "default" returns the source
/// unchanged. A profile the task does not define is the scaled one of shapes.hpp (small, ci:
/// integer constants of get_inputs() divided until the inputs fit a byte target) where its
/// shapes are understood; otherwise std::nullopt. "B+unseen" (or "unseen" for the default) is
/// profile B with shapes.hpp's unseen-shape rule applied (sizes >= 16 grow by 7). An override
/// naming a constant the file does not define is appended after the last constant.
std::optional<std::string> apply_profile(const Task& task, const std::string& profile);

/// Directories of the built-in suites: <kforge_home>/benchmarks/suites/<name>/.
std::vector<std::filesystem::path> builtin_suite_dirs();

/// Resolves a --suite argument: a built-in suite name, or a path to a directory.
/// Throws std::runtime_error naming the argument when neither exists.
std::filesystem::path resolve_suite(const std::string& name_or_path);

}  // namespace kforge
