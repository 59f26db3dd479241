#include <algorithm>

#include "catch.hpp"
#include "kforge/benchmarks/task.hpp"

using namespace kforge;
namespace fs = std::filesystem;

static fs::path fixture(const char* name) {
  return fs::path(KFORGE_TESTS_DIR) / "fixtures" / name;
}

static bool has_error(const Suite& s, const std::string& file_part, const std::string& field_part) {
  return std::any_of(s.skipped.begin(), s.skipped.end(), [&](const LoadError& e) {
    return e.file.string().find(file_part) != std::string::npos &&
           e.field.find(field_part) != std::string::npos;
  });
}

TEST_CASE("kforge layout: manifest fields, broken entries skipped with file and field", "[loader]") {
  Suite s = load_suite(fixture("kforge_suite"));
  CHECK(s.layout == "kforge");
  CHECK(s.name == "fixture");
  REQUIRE(s.tasks.size() == 1);
  const Task& t = s.tasks[0];
  CHECK(t.id == "act/relu");
  CHECK(t.category == "activation");
  CHECK(t.difficulty == 1);
  CHECK(t.flops == "BATCH * DIM");
  CHECK(t.tolerance_for("float32").atol == 1e-3);
  CHECK(t.tolerance_for("float16").atol == 1e-2);  // default
  CHECK(t.tolerance_for("int64").atol == 0);
  REQUIRE(t.constants.size() == 3);
  CHECK(t.constants[0].name == "BATCH");
  CHECK(t.constants[2].expr == "DIM * 2");
  // Every broken entry is reported, naming the file and the field.
  CHECK(has_error(s, "suite.json", "tasks[1].difficulty"));
  CHECK(has_error(s, "suite.json", "tasks[2].category"));
  CHECK(has_error(s, "broken.py", "get_inputs"));
  CHECK(has_error(s, "missing.py", "file"));
  CHECK(has_error(s, "suite.json", "tasks[5].id"));  // duplicate
  CHECK(has_error(s, "suite.json", "tasks[6].id"));  // missing
  CHECK(s.skipped.size() == 6);
}

TEST_CASE("profiles rewrite constants in place; derived constants follow", "[loader]") {
  Suite s = load_suite(fixture("kforge_suite"));
  const Task& t = s.tasks.at(0);
  auto ci = apply_profile(t, "ci");
  REQUIRE(ci.has_value());
  CHECK(ci->find("BATCH = 2  # profile ci") != std::string::npos);
  CHECK(ci->find("DIM = 4  # profile ci") != std::string::npos);
  CHECK(ci->find("HIDDEN = DIM * 2") != std::string::npos);  // untouched, recomputed by Python
  CHECK(ci->find("BATCH = 8") == std::string::npos);
  auto big = apply_profile(t, "big");
  REQUIRE(big.has_value());
  CHECK(big->find("EXTRA = 3") < big->find("class Model"));
  CHECK(apply_profile(t, "default") == t.source);
  CHECK_FALSE(apply_profile(t, "nope").has_value());
}

TEST_CASE("KernelBench layout: ids and difficulty from the level", "[loader]") {
  Suite s = load_suite(fixture("kernelbench"));
  CHECK(s.layout == "kernelbench");
  REQUIRE(s.tasks.size() == 3);
  const Task* relu = s.find("level1/19_ReLU");
  REQUIRE(relu != nullptr);
  CHECK(relu->difficulty == 1);
  REQUIRE(s.find("level2/5_Tanh_Sigmoid") != nullptr);
  CHECK(s.find("level2/5_Tanh_Sigmoid")->difficulty == 2);
  CHECK(has_error(s, "3_Broken.py", "get_inputs"));
}

TEST_CASE("MultiKernelBench layout: category from the folder", "[loader]") {
  for (auto dir : {fixture("multikernelbench"), fixture("multikernelbench") / "reference"}) {
    Suite s = load_suite(dir);
    CHECK(s.layout == "multikernelbench");
    REQUIRE(s.tasks.size() == 5);
    CHECK(s.skipped.empty());
    REQUIRE(s.find("reduce/sum_dim") != nullptr);
    CHECK(s.find("reduce/sum_dim")->category == "reduce");
    CHECK(s.find("activation/relu")->category == "activation");
    // MultiKernelBench's own folder names: arch/ and fuse/ (its dataset.py).
    REQUIRE(s.find("arch/tiny_mlp") != nullptr);
    CHECK(s.find("arch/tiny_mlp")->category == "full_architecture");
    CHECK(s.find("fuse/add_relu")->category == "fusion");
    // A folder outside the 14 keeps its tasks (under its own name) and says so.
    REQUIRE(s.find("bogus/thing") != nullptr);
    CHECK(s.find("bogus/thing")->category == "bogus");
    REQUIRE(s.notes.size() == 1);
    CHECK(s.notes[0].find("'bogus'") != std::string::npos);
  }
}

TEST_CASE("KernelBench: a level<N> folder given itself loads as one level", "[loader]") {
  Suite s = load_suite(fixture("kernelbench") / "level1");
  CHECK(s.layout == "kernelbench");
  REQUIRE(s.tasks.size() == 2);
  CHECK(s.tasks[0].id == "level1/1_Square_matrix_add");  // natural order: 1 before 19
  CHECK(s.tasks[1].id == "level1/19_ReLU");
  CHECK(s.tasks[1].difficulty == 1);
  CHECK(has_error(s, "3_Broken.py", "get_inputs"));
}

TEST_CASE("KernelBench categories are inferred from level and name", "[loader]") {
  CHECK(kernelbench_category(1, "19_ReLU") == "activation");
  CHECK(kernelbench_category(1, "100_HingeLoss") == "loss");
  CHECK(kernelbench_category(1, "57_conv_transposed_2D__square_input__square_kernel") == "convolution");
  CHECK(kernelbench_category(1, "41_Max_Pooling_1D") == "pooling");
  CHECK(kernelbench_category(1, "36_RMSNorm_") == "normalization");
  CHECK(kernelbench_category(1, "1_Square_matrix_multiplication_") == "matmul");
  CHECK(kernelbench_category(1, "4_Matrix_vector_multiplication_") == "matmul");
  CHECK(kernelbench_category(1, "47_Sum_reduction_over_a_dimension") == "reduce");
  CHECK(kernelbench_category(1, "51_Argmax_over_a_dimension") == "reduce");
  CHECK(kernelbench_category(1, "89_cumsum") == "math");
  CHECK(kernelbench_category(1, "97_ScaledDotProductAttention") == "");
  CHECK(kernelbench_category(2, "5_Tanh_Sigmoid") == "fusion");
  CHECK(kernelbench_category(3, "1_MLP") == "full_architecture");
  Suite s = load_suite(fixture("kernelbench"));
  CHECK(s.find("level1/19_ReLU")->category == "activation");
  CHECK(s.find("level2/5_Tanh_Sigmoid")->category == "fusion");
  REQUIRE_FALSE(s.notes.empty());
  CHECK(s.notes[0].find("inferred") != std::string::npos);
}

TEST_CASE("natural_less orders digit runs as numbers", "[loader]") {
  CHECK(natural_less("level1/2_a", "level1/10_a"));
  CHECK_FALSE(natural_less("level1/10_a", "level1/2_a"));
  CHECK(natural_less("level1/100_HingeLoss", "level2/1_x"));
  CHECK(natural_less("a", "b"));
  CHECK_FALSE(natural_less("a", "a"));
  CHECK(natural_less("x/007", "x/8"));
  CHECK(category_of_folder("arch") == "full_architecture");
  CHECK(category_of_folder("fuse") == "fusion");
  CHECK(category_of_folder("attention") == "attention");
}

TEST_CASE("a directory that is no suite is an error naming it", "[loader]") {
  CHECK_THROWS_WITH(load_suite(fixture("kforge_suite") / "act"), Catch::Contains("not a suite"));
  CHECK_THROWS_WITH(load_suite(fixture("nope")), Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(resolve_suite("no-such-suite"), Catch::Contains("no-such-suite"));
}
