#include "kforge/retrieval/retrieval.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <set>

#include "kforge/common/ascii.hpp"
#include "kforge/common/util.hpp"

namespace kforge::retrieval {

namespace fs = std::filesystem;

std::optional<Strategy> strategy_from_string(std::string_view s) {
  if (s == "none") return Strategy::none;
  if (s == "add") return Strategy::add;
  if (s == "category") return Strategy::category;
  if (s == "bm25") return Strategy::bm25;
  if (s == "library") return Strategy::library;
  return std::nullopt;
}

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::none:
      return "none";
    case Strategy::add:
      return "add";
    case Strategy::category:
      return "category";
    case Strategy::bm25:
      return "bm25";
    case Strategy::library:
      return "library";
  }
  return "none";
}

namespace {
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

void split_identifier(const std::string& id, std::vector<std::string>& out) {
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(ascii_lower(cur));
    cur.clear();
  };
  for (std::size_t i = 0; i < id.size(); ++i) {
    char c = id[i];
    if (c == '_') {
      flush();
      continue;
    }
    bool up = std::isupper(static_cast<unsigned char>(c));
    if (up && !cur.empty() &&
        (std::islower(static_cast<unsigned char>(cur.back())) ||
         (i + 1 < id.size() && std::islower(static_cast<unsigned char>(id[i + 1])))))
      flush();
    cur += c;
  }
  flush();
}
}  // namespace

std::vector<std::string> tokenize_code(std::string_view text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!ident_char(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() &&
           (ident_char(text[j]) ||
            (text[j] == '.' && j + 1 < text.size() && std::isalpha(static_cast<unsigned char>(text[j + 1])))))
      ++j;
    std::string word(text.substr(i, j - i));
    i = j;
    if (std::isdigit(static_cast<unsigned char>(word[0]))) continue;
    if (word.find('.') != std::string::npos) {
      out.push_back(ascii_lower(word));  // torch.softmax, F.relu as one token
      std::size_t s = 0;
      while (s <= word.size()) {
        std::size_t d = word.find('.', s);
        if (d == std::string::npos) d = word.size();
        std::string part = word.substr(s, d - s);
        if (!part.empty()) {
          std::vector<std::string> sub;
          split_identifier(part, sub);
          if (sub.size() > 1) out.push_back(ascii_lower(part));
          out.insert(out.end(), sub.begin(), sub.end());
        }
        s = d + 1;
      }
    } else {
      std::vector<std::string> sub;
      split_identifier(word, sub);
      if (sub.size() > 1) out.push_back(ascii_lower(word));
      out.insert(out.end(), sub.begin(), sub.end());
    }
  }
  return out;
}

Bm25::Bm25(const std::vector<std::string>& docs, double k1, double b) : k1_(k1), b_(b) {
  double total = 0;
  for (const auto& d : docs) {
    auto toks = tokenize_code(d);
    std::map<std::string, int> tf;
    for (auto& t : toks) tf[t]++;
    for (auto& [t, n] : tf) df_[t]++;
    tf_.push_back(std::move(tf));
    len_.push_back(static_cast<double>(toks.size()));
    total += static_cast<double>(toks.size());
  }
  avg_len_ = docs.empty() ? 0 : total / static_cast<double>(docs.size());
}

std::vector<double> Bm25::scores(std::string_view query) const {
  std::vector<double> s(tf_.size(), 0.0);
  std::set<std::string> q;
  for (auto& t : tokenize_code(query)) q.insert(t);
  const double n = static_cast<double>(tf_.size());
  for (const auto& t : q) {
    auto it = df_.find(t);
    if (it == df_.end()) continue;
    const double idf = std::log(1.0 + (n - it->second + 0.5) / (it->second + 0.5));
    for (std::size_t d = 0; d < tf_.size(); ++d) {
      auto f = tf_[d].find(t);
      if (f == tf_[d].end()) continue;
      const double tf = f->second;
      s[d] += idf * tf * (k1_ + 1) / (tf + k1_ * (1 - b_ + b_ * len_[d] / (avg_len_ > 0 ? avg_len_ : 1)));
    }
  }
  return s;
}

TaskOps task_ops(std::string_view reference) {
  static const std::regex gemm(
      R"(nn\.Linear\b|nn\.Bilinear\b|F\.linear\b|torch\.(matmul|mm|bmm|addmm|baddbmm|einsum)\b|\.matmul\(|[\w)\]]\s*@\s*[\w(])");
  static const std::regex conv(R"(nn\.Conv(Transpose)?[123]d\b|F\.conv(_transpose)?[123]d\b)");
  static const std::regex norm(
      R"(BatchNorm[123]d|LayerNorm|GroupNorm|InstanceNorm[123]d|RMSNorm|F\.(layer|group|batch|instance|rms)_norm|F\.normalize)");
  static const std::regex reduction(
      R"(\.(sum|mean|amax|amin|max|min|logsumexp|softmax|log_softmax|prod|var|std|norm|cumsum|argmax|argmin)\(|torch\.(sum|mean|amax|amin|max|min|logsumexp|softmax|log_softmax|prod|var|std|cumsum|argmax|argmin)\(|nn\.(Softmax|LogSoftmax)\b|_pool[123]d|Pool[123]d)");
  static const std::regex elementwise(
      R"(relu|gelu|sigmoid|tanh|silu|swish|mish|hardtanh|hardswish|elu\b|softplus|clamp|torch\.(exp|log|abs|where|minimum|maximum)|\breturn\s+[^\n]*[-+*/]|\bx\s*=\s*x\s*[-+*/]|\bx\s*[-+*/]=)");
  const std::string src(reference);
  TaskOps o;
  o.gemm = std::regex_search(src, gemm);
  o.conv = std::regex_search(src, conv);
  o.norm = std::regex_search(src, norm);
  o.reduction = std::regex_search(src, reduction);
  o.elementwise = std::regex_search(src, elementwise);
  return o;
}

std::string TaskOps::main() const {
  if (conv) return "convolution";
  if (gemm) return "GEMM";
  if (norm) return "normalisation";
  if (reduction) return "reduction";
  return "elementwise";
}

bool TaskOps::epilogue() const {
  const int classes = int(gemm) + int(conv) + int(norm) + int(reduction);
  return classes > 1 || (classes == 1 && elementwise);
}

std::string TaskOps::label() const {
  return main() + (epilogue() ? " + epilogue" : "");
}

bool category_says_little(std::string_view category) {
  return category == "fusion";
}

namespace {
std::optional<fs::path> kernel_file(const fs::path& dir) {
  for (const char* n : {"kernel.cu", "kernel.cpp", "kernel.py"})
    if (fs::exists(dir / n)) return dir / n;
  return std::nullopt;
}
}  // namespace

ExemplarStore::ExemplarStore(const fs::path& root,
                             const std::function<std::string(const std::string&)>& reference_of) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return;
  std::vector<fs::path> cats;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory()) cats.push_back(e.path());
  std::sort(cats.begin(), cats.end());
  for (const auto& cat : cats) {
    const std::string cname = cat.filename().string();
    if (cname == "add") {
      if (auto k = kernel_file(cat)) {
        Exemplar ex{"add", "add", fs::exists(cat / "reference.py") ? read_file(cat / "reference.py") : "",
                    read_file(*k), ""};
        add_ = ex;
      }
      continue;
    }
    std::vector<fs::path> names;
    for (const auto& e : fs::directory_iterator(cat))
      if (e.is_directory()) names.push_back(e.path());
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      auto k = kernel_file(n);
      if (!k) continue;
      Exemplar ex;
      ex.task_id = cname + "/" + n.filename().string();
      ex.category = cname;
      ex.kernel = read_file(*k);
      ex.reference =
          fs::exists(n / "reference.py") ? read_file(n / "reference.py") : reference_of(ex.task_id);
      items_.push_back(std::move(ex));
    }
  }
}

namespace {

/// How well an exemplar's operations fit a task's: the main class first, then the epilogue,
/// then every class they share less every class the exemplar adds, then the same category.
int ops_score(const TaskOps& task, const TaskOps& ex, bool same_category) {
  int s = task.main() == ex.main() ? 8 : 0;
  if (task.epilogue() == ex.epilogue()) s += 2;
  for (auto [t, e] : {std::pair{task.gemm, ex.gemm},
                      {task.conv, ex.conv},
                      {task.norm, ex.norm},
                      {task.reduction, ex.reduction}})
    s += t && e ? 1 : e ? -1 : 0;
  return s + int(same_category);
}

/// The exemplar of `pool` whose operations fit the task's best (ties: BM25 over the reference
/// and kernel, then pool order), its reason naming what it was chosen for.
std::optional<Exemplar> by_ops(const std::vector<const Exemplar*>& pool, const std::string& category,
                               const std::string& reference, const std::string& origin) {
  if (pool.empty()) return std::nullopt;
  const TaskOps t = task_ops(reference);
  std::vector<std::string> docs;
  for (const auto* e : pool) docs.push_back(e->reference + "\n" + e->kernel);
  const auto bm = Bm25(docs).scores(reference);
  std::size_t best = 0;
  int best_score = -1;
  for (std::size_t i = 0; i < pool.size(); ++i) {
    const int sc = ops_score(t, task_ops(pool[i]->reference), pool[i]->category == category);
    if (sc > best_score || (sc == best_score && bm[i] > bm[best])) {
      best = i;
      best_score = sc;
    }
  }
  Exemplar e = *pool[best];
  const TaskOps eo = task_ops(e.reference);
  e.reason = eo.main() == t.main() ? (eo.epilogue() == t.epilogue() ? t.label() : t.main())
                                   : "the closest operations to the task's " + t.label();
  e.reason += origin;
  return e;
}

}  // namespace

std::vector<Exemplar> ExemplarStore::select(Strategy s, const std::string& task_id,
                                            const std::string& category, const std::string& reference,
                                            const std::vector<Exemplar>& library) const {
  auto fits = [&](const Exemplar& e) { return e.task_id != task_id; };
  auto with = [](Exemplar e, std::string reason) {
    e.reason = std::move(reason);
    return std::vector<Exemplar>{std::move(e)};
  };
  switch (s) {
    case Strategy::none:
      return {};
    case Strategy::add:
      if (add_) return {*add_};
      return {};
    case Strategy::category: {
      if (!category_says_little(category))
        for (const auto& e : items_)
          if (e.category == category && fits(e)) return with(e, "same category (" + category + ")");
      std::vector<const Exemplar*> pool;
      for (const auto& e : items_)
        if (fits(e)) pool.push_back(&e);
      for (const auto& e : library)
        if (fits(e)) pool.push_back(&e);
      if (auto e = by_ops(pool, category, reference, "")) {
        if (std::any_of(library.begin(), library.end(),
                        [&](const auto& l) { return l.task_id == e->task_id; }))
          e->reason += " (a kernel that passed in this run)";
        return {*e};
      }
      return {};
    }
    case Strategy::bm25: {
      std::vector<std::string> docs;
      for (const auto& e : items_) docs.push_back(e.reference + "\n" + e.kernel);
      Bm25 bm(docs);
      auto sc = bm.scores(reference);
      int best = -1;
      for (std::size_t i = 0; i < items_.size(); ++i) {
        if (items_[i].task_id == task_id) continue;
        if (best < 0 || sc[i] > sc[static_cast<std::size_t>(best)]) best = static_cast<int>(i);
      }
      if (best < 0) return {};
      return with(items_[static_cast<std::size_t>(best)], "the closest reference and kernel by BM25");
    }
    case Strategy::library: {
      if (category_says_little(category)) {
        std::vector<const Exemplar*> pool;
        for (const auto& e : library)
          if (fits(e)) pool.push_back(&e);
        if (auto e = by_ops(pool, category, reference, " (a kernel that passed in this run)")) return {*e};
        return {};
      }
      for (const auto& e : library)
        if (e.category == category && fits(e))
          return with(e, "a kernel that passed in this run, same category");
      for (const auto& e : library)
        if (fits(e)) return with(e, "a kernel that passed in this run");
      return {};
    }
  }
  return {};
}

}  // namespace kforge::retrieval
