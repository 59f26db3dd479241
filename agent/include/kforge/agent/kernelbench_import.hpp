// kforge/agent/kernelbench_import.hpp — `kforge import-kernelbench` (issue 23 §1): KernelBench's
// generations (files named level_<L>_problem_<P>_sample_<S>_kernel.py, as KernelBench's
// scripts/generate_samples.py writes them: a `ModelNew` whose kernels torch's load_inline builds)
// turned into kforge cuda candidates OUT/<task-id>/<S>/kernel.cu, which `kforge eval --backend
// cuda --kernels OUT` judges like any cuda kernel, one sample per generation.
//
// A generation is imported only where its inline source is self-contained: the load_inline
// sources are string literals (or names bound once to them), and ModelNew.forward returns one of
// its functions called on forward's inputs and numbers. backends/kernelbench/load_inline_import.py
// decides that with Python's parser (python3 -I, in the sandbox; the generation never runs) and
// writes kernel.cu: the torch shim (backends/kernelbench/torch_shim.cuh: the LibTorch API such
// kernels use, over the kforge ABI), the sources, and a kf_forward calling the function. Anything
// else is a per-file error naming the file and the reason. Free functions; thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kforge::agent {

/// The coordinates in a KernelBench generation's file name.
struct GenerationName {
  int level = 0;
  int problem = 0;
  int sample = 0;
};

/// "level_1_problem_19_sample_0_kernel.py" -> {1, 19, 0}; nullopt for any other name.
std::optional<GenerationName> parse_generation_name(const std::string& file_name);

/// One generation converted, or why not.
struct ImportedKernel {
  bool ok = false;
  std::string kernel;              ///< kernel.cu (ok)
  std::string reason;              ///< why it is not imported (!ok), e.g. "cuda_sources is an f-string..."
  int line = 0;                    ///< the generation's line the reason points at; 0 = none
  std::vector<std::string> notes;  ///< what was not carried over (e.g. extra_cuda_cflags)
};

/// Converts one generation through load_inline_import.py (`script`: empty = the one under
/// kforge_home()). A converter that cannot run is a !ok result saying so.
ImportedKernel import_load_inline(const std::filesystem::path& generation,
                                  const std::string& python = "python3",
                                  const std::filesystem::path& script = {});

/// `kforge import-kernelbench`.
struct ImportCommand {
  std::string suite;                  ///< KernelBench suite (root or level<N>/), maps problems to tasks
  std::filesystem::path generations;  ///< the folder of level_*_problem_*_sample_*_kernel.py
  std::filesystem::path out;          ///< kernels folder to write: <task-id>/<sample>/kernel.cu
};

/// Imports every generation of the folder: writes kernel.cu for each self-contained one (and
/// removes the kernel.cu an earlier import wrote for a generation that no longer imports) and
/// OUT/not_imported.json ({file: {reason, line}}), prints one stderr line per file not imported
/// ("<file>: not imported: <reason> (line N)") and a summary. 0 when the folder was read (files
/// not imported are results, listed), 2 for bad arguments (no suite, no such folder, no
/// generation files in it).
int run_import_kernelbench(const ImportCommand& cmd);

}  // namespace kforge::agent
