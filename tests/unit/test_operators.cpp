// ATen-operator tasks (issue 24): BackendBench's trace format read unchanged, bad lines named by
// file and line, the generated reference module and the candidate adapter.
#include <algorithm>
#include <cmath>

#include "catch.hpp"
#include "kforge/benchmarks/metrics.hpp"
#include "kforge/benchmarks/operators.hpp"
#include "kforge/benchmarks/shapes.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

fs::path data(const char* name) {
  return fs::path(KFORGE_TESTS_DIR) / "data" / "operators" / name;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("trace format: operators, counts, tensors, strides, literals", "[operators]") {
  const TraceFile t = parse_trace(read_file(data("sample_trace.txt")), data("sample_trace.txt"));
  REQUIRE(t.ops.size() == 5);
  CHECK(t.ops[0].op == "aten.add.Tensor");
  CHECK(t.ops[2].op == "aten.sum.dim_IntList");  // BackendBench's rename of aten.sum.SymInt
  REQUIRE(t.ops[0].cases.size() == 3);
  const OperatorCase& c0 = t.ops[0].cases[0];
  CHECK(c0.count == 12);
  CHECK(c0.line == 2);
  REQUIRE(c0.positional.size() == 2);
  CHECK(c0.positional[0].kind == OpValue::Kind::tensor);
  CHECK(c0.positional[0].shape == std::vector<std::int64_t>{2, 8, 16});
  CHECK(c0.positional[0].dtype == "f16");
  CHECK(c0.input_bytes() == Approx(2 * 2 * 8 * 16 * 2));
  const OperatorCase& c1 = t.ops[0].cases[1];
  REQUIRE(c1.keyword.size() == 1);
  CHECK(c1.keyword[0].first == "alpha");
  CHECK(c1.keyword[0].second.text == "2");
  const OperatorCase& c2 = t.ops[0].cases[2];
  CHECK(c2.count == 0);  // synthetic
  CHECK(c2.positional[0].stride == std::vector<std::int64_t>{1, 3});
  CHECK(c2.positional[1].text == "1.5");
  const OperatorCase& s = t.ops[2].cases[0];
  CHECK(s.positional[1].kind == OpValue::Kind::list);
  CHECK(s.positional[2].text == "True");
  CHECK(s.keyword[0].second.text == "torch.float32");
  CHECK(t.ops[4].cases[0].positional[1].text == "-math.inf");
  CHECK(t.cases() == 8);
}

TEST_CASE("trace format: bad lines are reported with file and line, the rest loads", "[operators]") {
  const TraceFile t = parse_trace(read_file(data("sample_trace.txt")), data("sample_trace.txt"));
  REQUIRE(t.errors.size() == 3);
  CHECK(t.errors[0].file == data("sample_trace.txt"));
  CHECK(t.errors[0].field == "line 14");
  CHECK(contains(t.errors[0].message, "neither"));
  CHECK(t.errors[1].field == "line 15");
  CHECK(contains(t.errors[1].message, "unknown dtype 'f99'"));
  CHECK(t.errors[2].field == "line 16");
  CHECK(contains(t.errors[2].to_string(), "sample_trace.txt: line 16: "));
  const TraceFile o = parse_trace(read_file(data("orphan.txt")), data("orphan.txt"));
  REQUIRE(o.errors.size() == 1);
  CHECK(o.errors[0].field == "line 1");
  CHECK(contains(o.errors[0].message, "before any Operator"));
  CHECK(o.ops.size() == 1);
}

TEST_CASE("case arguments that are not BackendBench's form are refused", "[operators]") {
  OperatorCase c;
  CHECK(parse_case_args("((T([2], f32),), {})", c) == std::nullopt);
  CHECK(parse_case_args("((T([2], f32),), {'dim': [0, 1], 'memory_format': torch.channels_last})", c) ==
        std::nullopt);
  CHECK(c.keyword.size() == 2);
  CHECK(parse_case_args("(T([2], f32), {})", c).has_value());             // args not a tuple
  CHECK(parse_case_args("((T([2, x], f32),), {})", c).has_value());       // a size that is no integer
  CHECK(parse_case_args("((T([2, 3], f32, [1]),), {})", c).has_value());  // stride of another rank
  CHECK(parse_case_args("((1,), {}) extra", c).has_value());
  CHECK(parse_case_args("((1,), {2: 3})", c).has_value());  // keywords are strings
}

TEST_CASE("operator names: the candidate's entry and the op map's variants", "[operators]") {
  CHECK(operator_entry("aten.relu.default") == "relu_kernel_impl");
  CHECK(operator_entry("aten._softmax.default") == "_softmax_kernel_impl");
  CHECK(operator_entry("aten.__and__.Tensor") == "and_kernel_impl");
  CHECK(is_variant_overload("aten.add_.Tensor"));
  CHECK(is_variant_overload("aten.add.out"));
  CHECK(is_variant_overload("aten.max.dim_max_out"));
  CHECK_FALSE(is_variant_overload("aten.add.Tensor"));
  CHECK_FALSE(is_variant_overload("aten.__and__.Tensor"));
}

TEST_CASE("an operator suite: one task per operator, the module over every case, the adapter",
          "[operators][loader]") {
  Suite s = load_suite(data("sample_trace.txt"));
  CHECK(s.layout == "operators");
  std::vector<std::string> ids;
  for (const auto& t : s.tasks) ids.push_back(t.id);
  CHECK(ids == std::vector<std::string>{"aten.add.Tensor", "aten.clamp.default", "aten.relu.default",
                                        "aten.sum.dim_IntList"});  // add_ is a variant
  CHECK(std::any_of(s.notes.begin(), s.notes.end(),
                    [](const std::string& n) { return contains(n, "aten.add_.Tensor"); }));
  CHECK(s.skipped.size() == 3);
  const Task* add = s.find("aten.add.Tensor");
  REQUIRE(add);
  CHECK(add->format == TaskFormat::aten_operator);
  CHECK(add->cases.size() == 3);
  CHECK(add->tolerance_for("float16").atol == Approx(1e-2));
  CHECK(add->tolerance_for("int64").atol == 0);
  CHECK(contains(add->source, "OP = torch.ops.aten.add.Tensor"));
  CHECK(contains(add->source, "def forward(self, a0, a1, a2, a3, a4):"));
  CHECK(contains(add->source, "out += _flat(OP(a0, a1))"));
  CHECK(contains(add->source, "out += _flat(OP(a2, a3, alpha=2))"));
  CHECK(contains(add->source, "out += _flat(OP(a4.as_strided([3, 5], [1, 3]), 1.5))"));
  CHECK(contains(add->source, "_t([3, 5], torch.float32, [1, 3]),"));
  const std::string ad = operator_adapter(add->aten_op, add->cases);
  CHECK(ad.find(operator_adapter_marker()) != std::string::npos);
  CHECK(contains(ad, "def kf_forward(a0, a1, a2, a3, a4):"));
  CHECK(contains(ad, "out += _kf_flat(add_kernel_impl(a2, a3, alpha=2))"));
  CHECK(s.find("aten.sum.dim_IntList")->source.find("OP(a0, [0], True, dtype=torch.float32)") !=
        std::string::npos);
}

namespace {
AttemptRecord op_att(const std::string& task, int turn, Outcome o, double speedup,
                     const std::string& cat = "operator") {
  AttemptRecord r;
  r.task = task;
  r.category = cat;
  r.sample = 0;
  r.turn = turn;
  r.backend = "triton";
  r.model = "m";
  r.outcome = o;
  r.speedup = speedup;
  if (speedup > 0) {
    r.t_reference_ms = 1.0;
    r.t_candidate_ms = 1.0 / speedup;
  }
  r.attempt_dir = attempt_rel_path(task, 0, turn).generic_string();
  return r;
}
}  // namespace

TEST_CASE("BackendBench's correctness score, performance score and perf@p over operators",
          "[operators][metrics]") {
  std::vector<AttemptRecord> recs{
      op_att("aten.add.Tensor", 1, Outcome::output_mismatch, 0),  // repaired at turn 2
      op_att("aten.add.Tensor", 2, Outcome::pass, 2.0),
      op_att("aten.relu.default", 1, Outcome::pass, 0.5),
      op_att("aten.neg.default", 1, Outcome::torch_fallback, 0),
      op_att("aten.abs.default", 1, Outcome::pass, 1.2),
      op_att("level1/19_ReLU", 1, Outcome::pass, 9.0, "activation"),  // not an operator task
  };
  MetricsConfig cfg;
  cfg.fast_ps = {0, 1, 1.5};
  const Summary s = summarize(recs, cfg);
  const BackendBenchScores& b = s.backendbench;
  CHECK(b.operators == 4);
  CHECK(b.correct == 3);
  CHECK(b.correctness_score == Approx(0.75));
  CHECK(b.performance_score == Approx(std::pow(2.0 * 0.5 * 1.0 * 1.2, 0.25)));  // neg counts 1.0
  CHECK(b.perf_at_p.at(0) == Approx(0.75));
  CHECK(b.perf_at_p.at(1) == Approx(0.5));  // add 2.0, abs 1.2
  CHECK(b.perf_at_p.at(1.5) == Approx(0.25));
  const auto j = to_json(s);
  CHECK(j["backendbench"]["correctness_score"].get<double>() == Approx(0.75));
  CHECK(j["backendbench"]["perf_at_p"]["1"].get<double>() == Approx(0.5));
  const Summary none = summarize({op_att("level1/19_ReLU", 1, Outcome::pass, 2.0, "activation")}, cfg);
  CHECK(none.backendbench.operators == 0);
}

TEST_CASE("the prompt's case table shows every argument, strides, keywords, and caps its rows",
          "[operators]") {
  const std::string trace =
      "Operator: aten.add.Tensor\n"
      "cnt: 3, ((T([64, 3, 7, 7], f16, [147, 1, 21, 3]), 2), {'alpha': 2})\n"
      "cnt: 1, ((T([8], f32), T([8], f32)), {})\n";
  auto tf = parse_trace(trace, "t.txt");
  REQUIRE(tf.ops.size() == 1);
  const std::string table = operator_cases_table(tf.ops[0].cases);
  CHECK(table.find("| case | trace line | cnt | arguments |") != std::string::npos);
  CHECK(table.find("| 0 | 2 | 3 | `f16[64, 3, 7, 7] stride [147, 1, 21, 3], 2, alpha=2` |") !=
        std::string::npos);
  CHECK(table.find("| 1 | 3 | 1 | `f32[8], f32[8]` |") != std::string::npos);
  const std::string capped = operator_cases_table(tf.ops[0].cases, 1);
  CHECK(capped.find("| 1 |") == std::string::npos);
  CHECK(capped.find("1 more case(s)") != std::string::npos);
}

TEST_CASE("unseen cases: sizes >= 16 grow by 7 consistently, small values and layouts stay", "[operators]") {
  OperatorCase a, b, c, d;
  REQUIRE_FALSE(parse_case_args("((T([64, 32], f32), T([32], f32)), {'alpha': 2})", a));
  REQUIRE_FALSE(parse_case_args("((T([2, 16, 64], f32), [64], T([64], f32), None, 1e-05), {})", b));
  REQUIRE_FALSE(parse_case_args("((T([16, 8], f32, [1, 16]), [-1], True), {})", c));
  REQUIRE_FALSE(parse_case_args("((T([3, 3, 3], f32), 0.5), {})", d));
  std::size_t changed = 0;
  const auto u = unseen_cases({a, b, c, d}, &changed);
  REQUIRE(u.size() == 4);
  CHECK(changed == 3);  // d has no size >= 16
  CHECK(u[0].args == "((T([71, 39], f32), T([39], f32)), {'alpha': 2})");
  CHECK(u[1].args == "((T([2, 23, 71], f32), [71], T([71], f32), None, 1e-05), {})");
  CHECK(u[2].args == "((T([23, 8], f32, [1, 23]), [-1], True), {})");  // column-major stays column-major
  CHECK(u[3].args == case_args_text(d));
  // Every unseen case reads back as a case, and the rule is one mapping (16 -> 23 everywhere).
  for (const auto& x : u) {
    OperatorCase back;
    CHECK_FALSE(parse_case_args(x.args, back));
  }
  CHECK(unseen_size(15) == 15);
  CHECK(unseen_size(16) == 23);
  CHECK(unseen_size(1000) == 1007);
  CHECK(unseen_size(std::int64_t{1} << 40) == (std::int64_t{1} << 40));  // a sentinel such as INT64_MAX stays
  CHECK(dense_strides_like({5, 7}, {0, 1}) == std::vector<std::int64_t>{0, 1});  // a broadcast stays
  // The trace text of the unseen cases loads as an operator suite.
  const TraceFile t = parse_trace(trace_text("aten.add.Tensor", u), "unseen.txt");
  CHECK(t.errors.empty());
  REQUIRE(t.ops.size() == 1);
  CHECK(t.ops[0].cases.size() == 4);
}

TEST_CASE("the unseen profile: '<P>+unseen' grows P's used constants by 7", "[operators][shapes]") {
  Task t;
  t.source =
      "import torch\nROWS = 64\nCOLS = 257\nK = 3\n\nclass Model(torch.nn.Module):\n"
      "    def forward(self, x):\n        return x\n\n"
      "def get_inputs():\n    return [torch.randn(ROWS, COLS * K)]\n\ndef get_init_inputs():\n    return "
      "[]\n";
  t.constants = {{"ROWS", "64", 2}, {"COLS", "257", 3}, {"K", "3", 4}};
  t.profiles["ci"] = {{"ROWS", "32"}};
  auto sp = unseen_profile(t.source);
  REQUIRE(sp);
  CHECK(sp->after.inputs.at(0).dims == std::vector<std::int64_t>{71, 264 * 3});
  auto ci = apply_profile(t, "ci+unseen");
  REQUIRE(ci);
  CHECK(contains(*ci, "ROWS = 39  # profile unseen"));
  CHECK(contains(*ci, "COLS = 264  # profile unseen"));
  CHECK(contains(*ci, "K = 3\n"));
  CHECK(apply_profile(t, "unseen") == sp->source);
  CHECK(has_profile(t, "ci+unseen"));
  CHECK_FALSE(has_profile(t, "nosuch+unseen"));
  CHECK(unseen_base("ci+unseen") == std::optional<std::string>("ci"));
  CHECK(unseen_base("ci") == std::nullopt);
}

TEST_CASE("the cpu/cuda adapter: one entry call per case, views, kf_arg kinds, output slices",
          "[operators]") {
  OperatorCase a, b;
  REQUIRE_FALSE(
      parse_case_args("((T([16, 8], f32, [1, 16]), [64], True, None, 1e-05), {'approximate': 'tanh'})", a));
  REQUIRE_FALSE(parse_case_args("(([T([4], f32), T([4], f32)], -1), {'alpha': -inf})", b));
  const std::string s = operator_adapter_native("aten.foo.default", {a, b});
  CHECK(starts_with(s, "\n\n" + native_adapter_marker()));
  CHECK(contains(s, "extern \"C\" int foo_kernel_impl(const kf_tensor* inputs"));
  CHECK(contains(s, "if (n_inputs != 3) return 90;"));             // the cases' three tensors
  CHECK(contains(s, "t[0].sizes[0] = 16; t[0].strides[0] = 1;"));  // the strided view
  CHECK(contains(s, "t[0].sizes[1] = 8; t[0].strides[1] = 16;"));
  CHECK(contains(s, "{\"\", KF_ARG_INTS, 0, 0, 0.0, 1, l1, nullptr}"));
  CHECK(contains(s, "static const int64_t l1[] = {64LL};"));
  CHECK(contains(s, "{\"\", KF_ARG_BOOL, 0, 1, 0.0, 0, nullptr, nullptr}"));
  CHECK(contains(s, "{\"\", KF_ARG_NONE,"));
  CHECK(contains(s, "{\"\", KF_ARG_FLOAT, 0, 0, 1e-05,"));
  CHECK(contains(s, "{\"approximate\", KF_ARG_OTHER, 0, 0, 0.0, 0, nullptr, \"'tanh'\"}"));
  CHECK(contains(s, "t[0] = inputs[1];"));  // case 1's tensors continue the numbering
  CHECK(contains(s, "t[1] = inputs[2];"));
  CHECK(contains(s, "{\"\", KF_ARG_TENSORS, 0, 0, 0.0, 2, l0, nullptr}"));
  CHECK(contains(s, "{\"\", KF_ARG_INT, 0, -1LL,"));
  CHECK(contains(s, "{\"alpha\", KF_ARG_FLOAT, 0, 0, -__builtin_inf(),"));
  CHECK(contains(s, "foo_kernel_impl(t, 2, outputs + 1 * per, per, a, 3, stream)"));
  CHECK(contains(s, "#undef kf_forward\n#undef foo_kernel_impl\n"));  // no candidate macro rewrites it
}
