// [backends] issue 11 §3: the compiler's note: lines stay attached to their error, on real
// g++ output (and recorded nvcc/EDG context lines).
#include <unistd.h>

#include <filesystem>
#include <string>

#include "catch.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/backends/diagnostics.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

using namespace kforge;
using namespace kforge::backends;
namespace fs = std::filesystem;

TEST_CASE("g++ notes are attached to their error and summarised with it", "[backends][diagnostics]") {
  const fs::path dir = fs::temp_directory_path() / ("kforge-notes-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string src =
      "#include <cstdint>\n"
      "static void gelu(const float* x, float* y, int64_t n) {\n"
      "  for (int64_t i = 0; i < n; ++i) y[i] = x[i];\n"
      "}\n"
      "int f(const float* x, float* y) {\n"
      "  gelu(x, y);\n"
      "  return 0;\n"
      "}\n";
  write_file(dir / "kernel.cpp", src);
  sandbox::Spec spec;
  spec.argv = {"g++", "-std=c++17", "-fsyntax-only", "kernel.cpp"};
  spec.cwd = dir;
  spec.env_set = {{"LC_ALL", "C"}};
  auto r = sandbox::run(spec);
  fs::remove_all(dir);
  if (r.status == sandbox::Status::failed_to_start) {
    WARN(std::string("SKIPPED: ") + "g++ is not installed: " + r.error);
    return;
  }
  REQUIRE_FALSE(r.ok());
  const std::string log = r.err + r.out;
  INFO(log);
  REQUIRE(log.find("note:") != std::string::npos);  // real g++ prints notes here

  auto diags = parse_diagnostics(log, src, "kernel.cpp");
  const Diagnostic* e = first_error(diags);
  REQUIRE(e != nullptr);
  CHECK_THAT(e->message, Catch::Contains("too few arguments"));
  REQUIRE(e->notes.size() >= 1);
  CHECK_THAT(e->notes[0], Catch::Contains("kernel.cpp:2:"));
  CHECK_THAT(e->notes[0], Catch::Contains("note: declared here"));
  CHECK_THAT(e->notes[0], Catch::Contains("2 | static void gelu"));  // the note's source line

  const std::string sum = summarise(diags);
  CHECK_THAT(sum, Catch::Contains("kernel.cpp:6:"));
  CHECK_THAT(sum, Catch::Contains("note: declared here"));
  // The note follows its error, indented.
  CHECK(sum.find("error:") < sum.find("    kernel.cpp:2:"));
}

TEST_CASE("notes: a note before any error is not attached; nvcc context lines are",
          "[backends][diagnostics]") {
  const std::string log =
      "kernel.cu(3): note: orphan\n"
      "kernel.cu(12): error: no instance of overloaded function \"f\" matches the argument list\n"
      "            argument types are: (float *)\n"
      "          detected during instantiation of \"void k<T>(T *) [with T=float]\" at line 20\n"
      "kernel.cu(30): warning #177-D: variable \"z\" was declared but never referenced\n"
      "kernel.cpp:4:3: error: 'foo' was not declared in this scope\n"
      "kernel.cpp:2:6: note: suggested alternative: 'food'\n"
      "kernel.cpp:2:6: note: another\n"
      "kernel.cpp:2:6: note: third\n";
  const Backend* cuda = find_backend("cuda");
  REQUIRE(cuda != nullptr);
  auto d = parse_diagnostics(log, {}, {}, cuda->diagnostic_dialects());
  // Without the cuda backend's dialects the nvcc lines are not diagnostics: only g++'s are read.
  CHECK(parse_diagnostics(log).size() == 4);
  // "remark"/"note" in EDG form is not a diagnostic kNvcc knows as a note; the error is first.
  const Diagnostic* e = first_error(d);
  REQUIRE(e != nullptr);
  REQUIRE(e->notes.size() == 1);
  CHECK_THAT(e->notes[0], Catch::Contains("detected during instantiation"));
  const Diagnostic* e2 = nullptr;
  for (const auto& x : d)
    if (x.severity == Severity::error && x.file == "kernel.cpp") e2 = &x;
  REQUIRE(e2 != nullptr);
  CHECK(e2->notes.size() == 3);
  const std::string s = summarise(d, 5, 4096, 2);
  CHECK_THAT(s, Catch::Contains("suggested alternative"));
  CHECK_THAT(s, Catch::Contains("(1 more note(s))"));
  CHECK(s.find("third") == std::string::npos);
}
