// The static scan of Triton candidates (backends/triton/ast_scan.py through the sandbox): the
// adversarial candidates of tests/data/adversarial/triton/ get the verdicts their manifest
// gives, the shipped Triton exemplars pass it, and the scanner's reply is parsed strictly.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "catch.hpp"
#include "kforge/backends/triton_scan.hpp"
#include "kforge/common/util.hpp"

using namespace kforge;
using namespace kforge::backends;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = fs::path(KFORGE_TESTS_DIR).parent_path();

ScanOptions options() {
  ScanOptions o;
  o.script = kSource / "backends" / "triton" / "ast_scan.py";
  return o;
}

struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("kforge-test-scan-" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// The interpreters the scan is run with: plain python3 (no torch: attribute chains judged by
/// their literal names) and, where the build has one, the interpreter with torch and triton
/// (chains resolved against the installed packages). Both must give every verdict.
std::vector<std::string> interpreters() {
  std::vector<std::string> v = {"python3"};
#ifdef KFORGE_TEST_PYTHON
  if (fs::exists(KFORGE_TEST_PYTHON)) v.push_back(KFORGE_TEST_PYTHON);
#endif
  return v;
}

bool has_rule(const ScanResult& r, const std::string& rule) {
  for (const auto& f : r.findings)
    if (f.rule == rule) return true;
  return false;
}

}  // namespace

TEST_CASE("triton scan: adversarial candidates get their manifest's verdict", "[triton_scan]") {
  const fs::path root = fs::path(KFORGE_TESTS_DIR) / "data" / "adversarial" / "triton";
  const auto manifest = nlohmann::json::parse(read_file(root / "manifest.json"));
  REQUIRE(fs::exists(root / manifest.at("task").get<std::string>()));
  std::size_t scan_stage = 0, run_stage = 0;
  for (const auto& python : interpreters())
    for (const auto& k : manifest.at("kernels")) {
      const std::string name = k.at("name");
      INFO(name << " with " << python);
      ScanOptions o = options();
      o.python = python;
      const auto r = scan_triton_candidate(root / name / "kernel.py", o);
      REQUIRE(r.error.empty());
      if (k.at("stage") == "scan") {
        ++scan_stage;
        CHECK(k.at("outcome") == "forbidden_api");
        CHECK(r.outcome == Outcome::forbidden_api);
        CHECK(has_rule(r, k.at("rule").get<std::string>()));
        REQUIRE(!r.findings.empty());
        CHECK(r.findings.front().line > 0);
        CHECK(!r.findings.front().source_line.empty());
      } else {
        ++run_stage;  // decided by the runtime checks: the scan must let it through untouched
        CHECK(r.outcome == Outcome::pass);
        CHECK(r.findings.empty());
      }
    }
  CHECK(scan_stage >= 33);
  CHECK(run_stage >= 6);
}

TEST_CASE("triton scan: findings carry rule, line and source; the summary names them", "[triton_scan]") {
  const fs::path k =
      fs::path(KFORGE_TESTS_DIR) / "data" / "adversarial" / "triton" / "spawns_process" / "kernel.py";
  const auto r = scan_triton_candidate(k, options());
  REQUIRE(r.outcome == Outcome::forbidden_api);
  CHECK(r.sub_kind() == "process");
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].line == 19);
  CHECK(r.findings[0].column == 1);
  CHECK(r.findings[0].what == "import subprocess");
  CHECK(r.findings[0].source_line == "import subprocess");
  CHECK(r.summary() ==
        "kernel.py:19:1: forbidden (process): import subprocess: starts processes\n"
        "    import subprocess\n");
}

TEST_CASE("triton scan: every shipped Triton exemplar passes", "[triton_scan]") {
  const fs::path root = kSource / "prompts" / "exemplars" / "triton";
  std::size_t n = 0;
  if (!fs::is_directory(root)) {
    WARN("no Triton exemplars under " << root);
    return;
  }
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().filename() != "kernel.py") continue;
    ++n;
    INFO(e.path());
    const auto r = scan_triton_candidate(e.path(), options());
    CHECK(r.summary().empty());
    CHECK(r.outcome == Outcome::pass);
  }
  CHECK(n >= 15);
}

TEST_CASE("triton scan: syntax errors, a missing interpreter and malformed replies", "[triton_scan]") {
  ScratchDir dir;
  const fs::path bad = dir.path / "kernel.py";
  write_file(bad, "import triton\n\ndef kf_forward(x, y):\n    return (x\n");
  const auto s = scan_triton_candidate(bad, options());
  CHECK(s.outcome == Outcome::compile_error);
  CHECK(s.sub_kind() == "syntax");
  REQUIRE(s.syntax_error);
  CHECK(s.syntax_error->group == PythonErrorGroup::syntax);
  CHECK(s.syntax_error->line == 4);
  CHECK(s.syntax_error->source_line == "return (x");

  ScanOptions o = options();
  o.python = "/nonexistent/python3";
  const auto missing = scan_triton_candidate(bad, o);
  CHECK(missing.outcome == Outcome::infra_error);
  CHECK(missing.error.find("could not start") != std::string::npos);

  CHECK(parse_scan_output("not json", "").outcome == Outcome::infra_error);
  CHECK(parse_scan_output(R"({"version": 1})", "").outcome == Outcome::infra_error);
  CHECK(parse_scan_output(R"({"findings": [{"line": 3}]})", "").outcome == Outcome::infra_error);
  const auto clean = parse_scan_output(R"({"version": 1, "syntax_error": null, "findings": []})", "x = 1\n");
  CHECK(clean.outcome == Outcome::pass);
  CHECK(clean.sub_kind().empty());
  const auto one = parse_scan_output(
      R"({"findings": [{"rule": "network", "line": 2, "col": 1, "what": "import socket", "why": "w"}]})",
      "import torch\nimport socket\n");
  CHECK(one.outcome == Outcome::forbidden_api);
  CHECK(one.findings.at(0).source_line == "import socket");
}

TEST_CASE("triton scan: a warm scanner gives what a cold scan gives", "[triton_scan]") {
  std::vector<fs::path> files;
  for (const auto& e :
       fs::recursive_directory_iterator(fs::path(KFORGE_TESTS_DIR) / "data" / "adversarial" / "triton"))
    if (e.path().filename() == "kernel.py") files.push_back(e.path());
  REQUIRE(files.size() >= 39);
  ScratchDir dir;
  const fs::path bad = dir.path / "kernel.py";
  write_file(bad, "import triton\n\ndef kf_forward(x, y):\n    return (x\n");
  files.push_back(bad);
  for (const auto& python : interpreters())
    for (const auto& f : files) {
      INFO(f << " with " << python);
      ScanOptions warm = options(), cold = options();
      warm.python = cold.python = python;
      cold.warm = false;
      const auto w = scan_triton_candidate(f, warm);
      const auto c = scan_triton_candidate(f, cold);
      CHECK(w.error.empty());
      CHECK(w.outcome == c.outcome);
      CHECK(w.summary(100) == c.summary(100));
    }
}

TEST_CASE("triton scan: a warm scanner that fails is never the candidate's", "[triton_scan]") {
  ScratchDir dir;
  const fs::path k = dir.path / "kernel.py";
  write_file(k, "import triton\n");
  // A stand-in scanner: served, it reads one request and dies or hangs; run cold it reports
  // one finding of rule "cold".
  const auto fake = [&](const std::string& served) {
    const fs::path script = dir.path / "fake_scan.py";
    write_file(
        script,
        "import sys, time\n"
        "if sys.argv[1] == '--serve':\n"
        "    print('ready', flush=True)\n"
        "    sys.stdin.readline()\n" +
            served +
            "else:\n"
            "    print('{\"findings\": [{\"rule\": \"cold\", \"line\": 1, \"col\": 1, \"what\": \"w\", "
            "\"why\": \"y\"}]}')\n");
    ScanOptions o = options();
    o.script = script;
    o.timeout = std::chrono::milliseconds(2'000);
    return o;
  };
  SECTION("it dies: the scan is done cold") {
    const auto o = fake("    sys.exit(0)\n");
    for (int i = 0; i < 2; ++i) {
      const auto r = scan_triton_candidate(k, o);
      CHECK(r.outcome == Outcome::forbidden_api);
      CHECK(r.sub_kind() == "cold");
    }
  }
  SECTION("it answers out of protocol: the scan is done cold") {
    const auto r = scan_triton_candidate(k, fake("    print('not json', flush=True)\n    time.sleep(30)\n"));
    CHECK(r.sub_kind() == "cold");
  }
  SECTION("it hangs: the scan's time is up (infra_error, as cold), and the scanner is not reused") {
    const auto o = fake("    time.sleep(30)\n");
    const auto r = scan_triton_candidate(k, o);
    CHECK(r.outcome == Outcome::infra_error);
    CHECK(r.error.find("timed out") != std::string::npos);
    const auto again = scan_triton_candidate(k, o);
    CHECK(again.outcome == Outcome::infra_error);  // a new scanner, which hangs the same way
  }
}

TEST_CASE("triton scan: prewarmed scanners are started at once and used by later scans", "[triton_scan]") {
  ScratchDir dir;
  const fs::path k = dir.path / "kernel.py";
  write_file(k, "import triton\n");
  const fs::path starts = dir.path / "starts";
  // A stand-in scanner that notes each start, says ready after a pause (an import of torch),
  // and answers every request with one finding naming its pid.
  const fs::path script = dir.path / "counting_scan.py";
  write_file(
      script,
      "import os, sys, time\n"
      "open(" +
          std::string("'") + starts.string() +
          "', 'a').write('%d\\n' % os.getpid())\n"
          "assert sys.argv[1] == '--serve'\n"
          "time.sleep(0.5)\n"
          "print('ready', flush=True)\n"
          "for line in sys.stdin:\n"
          "    print('{\"findings\": [{\"rule\": \"served\", \"line\": 1, \"col\": 1, \"what\": \"%d\", "
          "\"why\": \"y\"}]}' % os.getpid(), flush=True)\n");
  ScanOptions o = options();
  o.script = script;
  const auto lines = [&] {
    std::error_code ec;
    if (!fs::exists(starts, ec)) return 0;
    const std::string s = read_file(starts);
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  };
  const auto t0 = std::chrono::steady_clock::now();
  prewarm_triton_scanners(3, o);
  // Returned before any scanner was ready (each pauses 0.5 s before `ready`).
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(450));
  for (int i = 0; i < 100 && lines() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(lines() == 3);
  prewarm_triton_scanners(3, o);  // the pool holds three already: none more
  const auto r = scan_triton_candidate(k, o);
  CHECK(r.sub_kind() == "served");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(lines() == 3);  // the scan took a prewarmed scanner
}
