// Python exceptions -> outcomes, sub-kinds, TritonBench groups and the offending line, on real
// tracebacks (tests/data/python_errors/, see its README for how they were produced).
#include "catch.hpp"
#include "kforge/backends/python_errors.hpp"
#include "kforge/common/util.hpp"

using namespace kforge;
using namespace kforge::backends;
namespace fs = std::filesystem;

namespace {

fs::path case_dir(const std::string& name) {
  return fs::path(KFORGE_TESTS_DIR) / "data" / "python_errors" / name;
}

PythonErrorVerdict classify_case(const std::string& name) {
  const std::string trace = read_file(case_dir(name) / "trace.txt");
  const std::string source = read_file(case_dir(name) / "kernel.py");
  auto v = classify_traceback(trace, source, "kernel.py");
  REQUIRE(v);
  return *v;
}

struct Expect {
  const char* name;
  Outcome outcome;
  const char* sub_kind;
  PythonErrorGroup group;
  const char* type;
  int line;
  const char* source_line;
};

}  // namespace

TEST_CASE("python errors: real tracebacks map to outcome, sub-kind, group and line", "[python_errors]") {
  using G = PythonErrorGroup;
  const Expect cases[] = {
      {"syntax_error", Outcome::compile_error, "syntax", G::syntax, "SyntaxError", 5,
       "out = torch.empty_like(x"},
      {"indentation_error", Outcome::compile_error, "syntax", G::syntax, "IndentationError", 6, "return out"},
      {"name_error", Outcome::compile_error, "undeclared", G::name_ref, "NameError", 6,
       "out = torch.empty_like(x)"},
      {"attribute_error", Outcome::compile_error, "no_member", G::attr_type, "AttributeError", 6,
       "grid = (triton.ceil_div(1024, 128),)"},
      // The call itself failed: no frame in the candidate's file.
      {"type_error", Outcome::compile_error, "type_mismatch", G::attr_type, "TypeError", 0, ""},
      {"module_not_found", Outcome::compile_error, "missing_include", G::name_ref, "ModuleNotFoundError", 2,
       "import cupy"},
      // Raised inside triton.cdiv: the line is the candidate's last frame, not Triton's.
      {"zero_division", Outcome::runtime_error, "python_exception", G::run_logic, "ZeroDivisionError", 6,
       "return triton.cdiv(1024, block) // block"},
      {"index_error", Outcome::runtime_error, "python_exception", G::name_ref, "IndexError", 3,
       "return shapes[0]"},
      {"key_error", Outcome::runtime_error, "python_exception", G::name_ref, "KeyError", 5,
       "return CONFIGS[\"large\"]"},
      {"assertion_error", Outcome::runtime_error, "python_exception", G::run_logic, "AssertionError", 2,
       "assert x is not None, \"inputs must be tensors\""},
      {"recursion_error", Outcome::runtime_error, "python_exception", G::run_logic, "RecursionError", 2,
       "return helper(n + 1)"},
      {"chained_value_error", Outcome::runtime_error, "python_exception", G::run_logic, "RuntimeError", 5,
       "raise RuntimeError(\"bad BLOCK setting\") from e"},
      {"not_implemented", Outcome::runtime_error, "python_exception", G::attr_type, "NotImplementedError", 2,
       "raise NotImplementedError(\"backward pass\")"},
      // Triton's CompilationError: the line is the kernel's, found from the excerpt in the message.
      {"triton_compilation_attribute", Outcome::compile_error, "no_member", G::attr_type, "CompilationError",
       12, "out = tl.relu(x) * 2 + y"},
      {"triton_compilation_name", Outcome::compile_error, "undeclared", G::name_ref, "CompilationError", 9,
       "tl.store(out_ptr + offs, x * scale, mask=offs < n)"},
      {"triton_compilation_arange", Outcome::compile_error, "type_mismatch", G::run_logic, "CompilationError",
       7, "offs = tl.arange(0, n)"},
      {"triton_compilation_type", Outcome::compile_error, "type_mismatch", G::run_logic, "CompilationError",
       9, "y = tl.load(y_ptr, offs)"},
      {"cuda_illegal_memory_access", Outcome::runtime_error, "illegal_memory_access", G::run_logic,
       "RuntimeError", 16, "return out.sum()"},
      {"cuda_out_of_memory", Outcome::runtime_error, "out_of_memory", G::run_logic, "OutOfMemoryError", 5,
       "scratch = torch.empty((1 << 40,), device=x.device)"},
      {"triton_out_of_resources", Outcome::runtime_error, "invalid_launch", G::run_logic, "OutOfResources",
       15, "kernel[(1,)](x, out, BLOCK=1024)"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto v = classify_case(c.name);
    CHECK(v.outcome == c.outcome);
    CHECK(v.sub_kind() == c.sub_kind);
    CHECK(v.group == c.group);
    CHECK(v.type == c.type);
    CHECK(v.line == c.line);
    CHECK(v.source_line == c.source_line);
  }
}

TEST_CASE("python errors: a CompilationError names its cause", "[python_errors]") {
  auto attr = classify_case("triton_compilation_attribute");
  CHECK(attr.inner_type == "AttributeError");
  CHECK(attr.headline ==
        "CompilationError: AttributeError: module 'triton.language' has no attribute 'relu'");
  auto name = classify_case("triton_compilation_name");
  CHECK(name.inner_type == "NameError");
  CHECK(name.headline == "CompilationError: NameError: scale is not defined");
  // The cause printed as plain text: its type comes from the chained traceback before it.
  auto arange = classify_case("triton_compilation_arange");
  CHECK(arange.inner_type == "ValueError");
  CHECK(arange.headline == "CompilationError: ValueError: arange's arguments must be of type tl.constexpr");
  // Without the candidate's source the file line is unknown but the kernel line is kept.
  const std::string trace = read_file(case_dir("triton_compilation_name") / "trace.txt");
  auto v = classify_traceback(trace);
  REQUIRE(v);
  CHECK(v->line == 0);
  CHECK(v->source_line == "tl.store(out_ptr + offs, x * scale, mask=offs < n)");
}

TEST_CASE("python errors: parse_traceback reads frames, message lines and the cause", "[python_errors]") {
  auto e = parse_traceback(read_file(case_dir("chained_value_error") / "trace.txt"));
  REQUIRE(e);
  CHECK(e->type == "RuntimeError");
  CHECK(e->message == "bad BLOCK setting");
  CHECK(e->cause_type == "ValueError");
  REQUIRE(e->frames.size() >= 2);
  CHECK(e->frames.back().function == "parse_block");
  CHECK(e->frames.back().line == 5);

  auto ce = parse_traceback(read_file(case_dir("triton_compilation_attribute") / "trace.txt"));
  REQUIRE(ce);
  CHECK(ce->type == "triton.compiler.errors.CompilationError");
  CHECK(starts_with(ce->message, "at 7:10:\ndef kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):"));

  auto cuda = parse_traceback(read_file(case_dir("cuda_illegal_memory_access") / "trace.txt"));
  REQUIRE(cuda);
  CHECK(cuda->message.find("CUDA_LAUNCH_BLOCKING=1") != std::string::npos);  // continuation lines kept

  // Warnings before the traceback and no traceback at all.
  auto bare = parse_traceback("UserWarning: something\nSyntaxError: invalid syntax\n");
  REQUIRE(bare);
  CHECK(bare->type == "SyntaxError");
  CHECK(bare->frames.empty());
  CHECK_FALSE(parse_traceback("all good\n"));
  CHECK_FALSE(parse_traceback(""));
}

TEST_CASE("python errors: types without a traceback", "[python_errors]") {
  auto results = classify_python_error("ResultsError", "test_case_2 differs");
  CHECK(results.outcome == Outcome::output_mismatch);
  CHECK(results.sub_kind() == "values");
  CHECK(results.group == PythonErrorGroup::run_logic);

  auto perm =
      classify_python_error("builtins.PermissionError", "[Errno 1] Operation not permitted: '/etc/passwd'");
  CHECK(perm.outcome == Outcome::runtime_error);
  CHECK(perm.sub_kind() == "sandbox");
  CHECK(perm.group == PythonErrorGroup::other);

  auto accel = classify_python_error("torch.AcceleratorError", "CUDA error: misaligned address\n...");
  CHECK(accel.sub_kind() == "misaligned_address");
  CHECK(accel.group == PythonErrorGroup::run_logic);

  auto launch = classify_python_error("RuntimeError", "CUDA error: invalid configuration argument");
  CHECK(launch.sub_kind() == "invalid_launch");
  auto plain = classify_python_error("RuntimeError", "shape '[4, 4]' is invalid for input of size 8");
  CHECK(plain.sub_kind() == "python_exception");

  auto os_err = classify_python_error("OSError", "[Errno 24] Too many open files");
  CHECK(os_err.outcome == Outcome::runtime_error);
  CHECK(os_err.group == PythonErrorGroup::other);
  CHECK(os_err.headline == "OSError: [Errno 24] Too many open files");

  auto assert_fail = classify_python_error("triton.compiler.errors.CompileTimeAssertionFailure",
                                           "at 3:4:\ndef k(X):\n    tl.static_assert(False)\n    ^\nboom");
  CHECK(assert_fail.outcome == Outcome::compile_error);
  CHECK(assert_fail.sub_kind() == "other");
  CHECK(assert_fail.group == PythonErrorGroup::run_logic);
  CHECK(assert_fail.source_line == "tl.static_assert(False)");

  CHECK(to_string(PythonErrorGroup::attr_type) == "Attr&Type");
  CHECK(to_string(PythonErrorGroup::name_ref) == "Name&Ref");
}

TEST_CASE("failure_headline: a traceback's exception line, never its first line", "[python_errors]") {
  const std::string tb =
      "Traceback (most recent call last):\n"
      "  File \"<kforge-reference>\", line 12, in chunk_delta_fwd\n"
      "    h = torch.empty(B, H, NT, K, V)\n"
      "RuntimeError: CUDA error: an illegal memory access was encountered\n"
      "CUDA kernel errors might be asynchronously reported at some other API call\n";
  CHECK(failure_headline(tb) == "RuntimeError: CUDA error: an illegal memory access was encountered");
  // The runner's prefix on the traceback's first line is kept.
  CHECK(failure_headline("loading task G/x failed: python_exception: " + tb) ==
        "loading task G/x failed: python_exception: RuntimeError: CUDA error: an illegal memory access was "
        "encountered");
  // Other texts: their first non-empty line (a mismatch report, a worker's death).
  CHECK(failure_headline("\n3 of 10 elements differ\ndetails") == "3 of 10 elements differ");
  CHECK(failure_headline("NameError: name 'tl' is not defined\nkernel.py:3: x\n\nTraceback (most recent "
                         "call last):\n  File \"k.py\", line 3\nNameError: name 'tl' is not defined") ==
        "NameError: name 'tl' is not defined");
  CHECK(failure_headline("") == "");
  // A traceback cut short: its last line, never the marker.
  CHECK(failure_headline("Traceback (most recent call last):\n") ==
        "a Python traceback without its exception line");
}

TEST_CASE("the triton backend explains its host's failures; kforge's own stay kforge's", "[python_errors]") {
  const Backend& triton = get_backend("triton");
  const std::string trace = read_file(case_dir("attribute_error") / "trace.txt");
  const std::string source = read_file(case_dir("attribute_error") / "kernel.py");
  FailureFacts run{Outcome::runtime_error, "python_exception", trace, source, "kernel.py", false};
  auto x = triton.explain_failure(run);
  REQUIRE(x);
  CHECK(x->outcome == Outcome::compile_error);
  CHECK(x->sub_kind == "no_member");
  CHECK(x->error_group == "Attr&Type");
  CHECK(starts_with(x->message, "AttributeError"));
  CHECK(x->message.find(trace.substr(trace.size() - 40)) != std::string::npos);  // the traceback's end

  // The scan's parse failure at build: Syntax, the scan's own message kept.
  FailureFacts build{
      Outcome::compile_error, "syntax", "kernel.py:1: invalid syntax", source, "kernel.py", true};
  x = triton.explain_failure(build);
  REQUIRE(x);
  CHECK(x->error_group == "Syntax");
  CHECK(x->message == "kernel.py:1: invalid syntax");

  // Not the backend's to reread: kforge's failure, a mismatch, a crash of another kind.
  for (auto [outcome, sub] :
       {std::pair{Outcome::infra_error, "judge_timeout"}, std::pair{Outcome::output_mismatch, "values"},
        std::pair{Outcome::runtime_error, "segfault"}})
    CHECK_FALSE(triton.explain_failure({outcome, sub, trace, source, "kernel.py", false}));
  // Backends that read nothing themselves keep the judge's outcome.
  CHECK_FALSE(get_backend("cpu").explain_failure(run));
}
