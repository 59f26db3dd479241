#pragma once
// Exemplar retrieval (docs/prompts.md). An Exemplar is a task plus a correct kernel: task id,
// category, reference source (PyTorch) and kernel source. ExemplarStore owns a corpus of
// exemplars loaded from prompts/exemplars/<backend>/<category>/<name>/kernel.{cpp,cu}; the
// reference sources are passed in by the caller (retrieval does not depend on benchmarks).
// select() implements the strategies none, add, category, bm25 and library; where a task's
// category says little (fusion, or a category without an exemplar) the category and library
// strategies choose by the task's dominant operations (task_ops) over the exemplars and the
// run's passes, and every chosen exemplar carries a short reason for the prompt. A store is
// immutable after construction and safe to read from many threads; the library strategy
// takes the run's passed kernels as an argument.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::retrieval {

struct Exemplar {
  std::string task_id;  ///< "<category>/<name>"
  std::string category;
  std::string reference;  ///< PyTorch reference source ("" when unknown)
  std::string kernel;     ///< the correct kernel's source
  std::string reason;     ///< why select() chose it, for the prompt ("GEMM + epilogue"); "" elsewhere
};

/// The operations that dominate a reference's cost, read from its source (PyTorch calls and
/// modules): the main class (GEMM, convolution, normalisation, reduction; else elementwise) and
/// whether other work follows it (an epilogue: activations, arithmetic, another class).
struct TaskOps {
  bool gemm = false, conv = false, norm = false, reduction = false, elementwise = false;
  std::string main() const;   ///< "GEMM", "convolution", "normalisation", "reduction", "elementwise"
  bool epilogue() const;      ///< work besides the main class
  std::string label() const;  ///< main(), with " + epilogue" when epilogue()
};
TaskOps task_ops(std::string_view reference);

/// True for a category that says little about a task's operations ("fusion": KernelBench level 2,
/// MultiKernelBench's fuse).
bool category_says_little(std::string_view category);

enum class Strategy { none, add, category, bm25, library };
std::optional<Strategy> strategy_from_string(std::string_view s);
std::string_view to_string(Strategy s);

/// Code-aware tokens: lowercased words, identifiers also split on snake_case and camelCase
/// (the whole identifier is kept too), dotted names such as torch.softmax kept as one token.
std::vector<std::string> tokenize_code(std::string_view text);

/// Okapi BM25 (k1 = 1.2, b = 0.75) over a set of documents.
class Bm25 {
 public:
  explicit Bm25(const std::vector<std::string>& docs, double k1 = 1.2, double b = 0.75);
  /// Score of every document for the query, in document order.
  std::vector<double> scores(std::string_view query) const;

 private:
  std::vector<std::map<std::string, int>> tf_;
  std::vector<double> len_;
  std::map<std::string, int> df_;
  double avg_len_ = 0, k1_, b_;
};

class ExemplarStore {
 public:
  /// Loads `<root>/<category>/<name>/kernel.*`. `reference_of(task_id)` returns the reference
  /// source ("" if unknown). A missing root gives an empty store. `<root>/add/` (when present,
  /// with reference.py) is the fixed one-shot exemplar of the `add` strategy.
  ExemplarStore(const std::filesystem::path& root,
                const std::function<std::string(const std::string&)>& reference_of);
  const std::vector<Exemplar>& exemplars() const { return items_; }
  const std::optional<Exemplar>& add_exemplar() const { return add_; }

  /// The exemplars to show for a task (0 or 1 here), each with its reason. The task's own
  /// exemplar is never returned (no answer leakage). `library` = kernels passed in this run.
  /// category: an exemplar of the task's category, unless category_says_little() or none
  /// exists: then the best match of task_ops() over the exemplars and `library`; library: a
  /// pass of the same category (by operations where the category says little), else any.
  std::vector<Exemplar> select(Strategy s, const std::string& task_id, const std::string& category,
                               const std::string& reference, const std::vector<Exemplar>& library = {}) const;

 private:
  std::vector<Exemplar> items_;
  std::optional<Exemplar> add_;
};

}  // namespace kforge::retrieval
