// The TritonBench layout: both channels, the separator split, entries, difficulty from the
// stats files, and the repository's quirks (tests/data/tritonbench/ mirrors its layout).
#include <algorithm>
#include <fstream>

#include "catch.hpp"
#include "kforge/benchmarks/task.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

fs::path tb(const char* sub = "") {
  return fs::path(KFORGE_TESTS_DIR) / "data" / "tritonbench" / sub;
}

bool skipped_with(const Suite& s, const std::string& file, const std::string& field,
                  const std::string& text) {
  return std::any_of(s.skipped.begin(), s.skipped.end(), [&](const LoadError& e) {
    return e.file.filename() == file && e.field == field && e.message.find(text) != std::string::npos;
  });
}

bool has_note(const Suite& s, const std::string& a, const std::string& b = "") {
  return std::any_of(s.notes.begin(), s.notes.end(), [&](const std::string& n) {
    return n.find(a) != std::string::npos && n.find(b) != std::string::npos;
  });
}

}  // namespace

TEST_CASE("TritonBench checkout: both channels, split at the 146-# line, difficulty from the stats",
          "[loader][tritonbench]") {
  Suite s = load_suite(tb());
  CHECK(s.layout == "tritonbench");
  std::vector<std::string> ids;
  for (const auto& t : s.tasks) ids.push_back(t.id);
  CHECK(ids == std::vector<std::string>{"G/add_example", "G/swiglu_pair", "T/quantize_custom", "T/relu_scale",
                                        "T/unlisted_abs"});

  const Task* t = s.find("T/relu_scale");
  REQUIRE(t);
  CHECK(t->format == TaskFormat::tritonbench_t);
  CHECK(std::string(to_string(t->format)) == "tritonbench_t");
  CHECK(t->entries == std::vector<std::string>{"relu_scale"});
  CHECK(t->difficulty == 1);  // an integer in the .jsonl (which is one JSON array)
  CHECK(t->description == "Applies ReLU, then scales by a constant.");
  CHECK(t->test_function == "test_relu_scale");
  CHECK(t->category == "activation");  // inferred from the name
  CHECK(t->source.find("def relu_scale(input, scale=2.0, out=None):") != std::string::npos);
  CHECK(t->source.find(tritonbench_separator()) == std::string::npos);
  CHECK(t->source.find("test_relu_scale") == std::string::npos);
  CHECK(t->test_source.find("test_results = test_relu_scale()") != std::string::npos);
  CHECK(t->test_source.find(tritonbench_separator()) == std::string::npos);

  const Task* g = s.find("G/add_example");
  REQUIRE(g);
  CHECK(g->format == TaskFormat::tritonbench_g);
  CHECK(g->difficulty == 2);  // a string ("2") in the G stats
  // A 103-# comment rule inside the implementation is not the separator.
  CHECK(g->source.find("def add_wrapper(x, y):") != std::string::npos);
  CHECK(g->entries == std::vector<std::string>{"add_wrapper"});  // add_kernel is not used by the test
  CHECK(g->test_function == "test_add");
  CHECK(g->description.find("add_wrapper") != std::string::npos);

  const Task* g2 = s.find("G/swiglu_pair");
  REQUIRE(g2);
  CHECK(g2->entries == std::vector<std::string>{"swiglu_forward", "swiglu_backward"});
  CHECK(g2->difficulty == 3);

  // KernelBench tasks keep their format and no entries.
  Suite kb = load_suite(fs::path(KFORGE_TESTS_DIR) / "fixtures" / "kernelbench");
  REQUIRE(!kb.tasks.empty());
  CHECK(kb.tasks[0].format == TaskFormat::kernelbench);
  CHECK(kb.tasks[0].entries.empty());
}

TEST_CASE("TritonBench: unusable files are skipped with the reason; quirks become notes",
          "[loader][tritonbench]") {
  Suite s = load_suite(tb());
  CHECK(s.skipped.size() == 3);
  CHECK(skipped_with(s, "no_separator.py", "separator", "no separator line of 146 '#'"));
  CHECK(skipped_with(s, "leaky_det.py", "test block", "redefines the entry `leaky_det`"));
  CHECK(skipped_with(s, "no_test_function.py", "test block", "no top-level `def test_*()`"));

  // T's name field is not the function: quantize_custom.py defines dynamic_custom.
  const Task* q = s.find("T/quantize_custom");
  REQUIRE(q);
  CHECK(q->entries == std::vector<std::string>{"dynamic_custom"});
  CHECK(q->difficulty == 4);
  CHECK(has_note(s, "entry function not named after the file", "quantize_custom.py -> dynamic_custom"));

  // A file the stats do not list loads without a difficulty; a listed file that is missing is noted.
  CHECK(s.find("T/unlisted_abs")->difficulty == 0);
  CHECK(has_note(s, "gives no difficulty for 1 file(s)", "unlisted_abs.py"));
  CHECK(has_note(s, "lists 1 file(s) missing", "gone.py"));
  CHECK(has_note(s, "no_test_function.py", "difficulty missing or not 1..5"));
  // Result variables other than the usual ones.
  CHECK(has_note(s, "`test_results`", "unlisted_abs.py"));
  CHECK(has_note(s, "`result_gold`", "swiglu_pair.py"));
}

TEST_CASE("TritonBench: the data/ folder or one channel folder given itself", "[loader][tritonbench]") {
  Suite d = load_suite(tb("data"));
  CHECK(d.layout == "tritonbench");
  CHECK(d.tasks.size() == 5);

  Suite g = load_suite(tb("data/TritonBench_G_v1"));
  CHECK(g.layout == "tritonbench");
  REQUIRE(g.tasks.size() == 2);
  CHECK(g.tasks[0].id == "G/add_example");
  CHECK(g.tasks[0].difficulty == 2);  // the stats beside the folder are still found

  Suite t = load_suite(tb("data/TritonBench_T_v1"));
  CHECK(t.tasks.size() == 3);
  CHECK(t.find("T/relu_scale")->difficulty == 1);
}

TEST_CASE("TritonBench: the T stats under the .json name TritonBench's eval_T script uses, as JSON lines",
          "[loader][tritonbench]") {
  fs::path root = fs::temp_directory_path() / "kforge-tb-jsonl";
  fs::remove_all(root);
  fs::create_directories(root / "data");
  fs::copy(tb("data/TritonBench_T_v1"), root / "data" / "TritonBench_T_v1");
  {
    std::ofstream f(root / "data" / "TritonBench_T_v1.json");
    f << R"({"name": "relu_scale", "file": "relu_scale.py", "difficulty": 5})"
      << "\n"
      << R"({"name": "torch.abs", "file": "unlisted_abs.py", "difficulty": "2"})"
      << "\n";
  }
  Suite s = load_suite(root);
  CHECK(s.find("T/relu_scale")->difficulty == 5);
  CHECK(s.find("T/unlisted_abs")->difficulty == 2);
  CHECK(s.find("T/quantize_custom")->difficulty == 0);
  fs::remove_all(root);
}
