// Which candidate host runs an artifact (issue 21 §6): the backend states it
// (Backend::host_kind), the runner client sends it ("host"), and the judge starts that host, not
// the one the artifact's file name suggests. A request without the field is refused.
#include <nlohmann/json.hpp>

#include "adversarial_task.hpp"
#include "catch.hpp"
#include "kforge/backends/evaluate.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"
#include "scratch_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;
using backends::HostKind;

namespace {

const fs::path kAdversarial = fs::path(KFORGE_TESTS_DIR) / "data/adversarial";

/// One request to a raw kforge-runner and its reply.
nlohmann::json ask(sandbox::LineChild& child, nlohmann::json req) {
  static int id = 0;
  req["id"] = std::to_string(++id);
  REQUIRE(child.write_line(req.dump()));
  auto line = child.read_line(std::chrono::milliseconds(120'000));
  REQUIRE(line);
  return nlohmann::json::parse(*line);
}

}  // namespace

TEST_CASE("host kind: each backend names its candidate host", "[backends]") {
  CHECK(backends::get_backend("cpu").host_kind() == HostKind::native);
  CHECK(backends::get_backend("cuda").host_kind() == HostKind::native);
  CHECK(backends::get_backend("triton").host_kind() == HostKind::python);
  for (auto h : {HostKind::native, HostKind::python})
    CHECK(backends::parse_host_kind(backends::to_string(h)) == h);
  CHECK_FALSE(backends::parse_host_kind("kforge-host"));
  CHECK_FALSE(backends::parse_host_kind(""));
  // compile_candidate() carries the backend's host into the Evaluation the judge is asked with.
  backends::EvalOptions eo;
  eo.compile.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";
  const fs::path work = scratch("host-kind-eval");
  auto ev = backends::compile_candidate(backends::get_backend("triton"),
                                        read_file(kAdversarial / "triton/correct/kernel.py"), work, eo);
  REQUIRE(ev.compile.ok());
  CHECK(ev.host == HostKind::python);
}

TEST_CASE("host kind: the judge starts the host the request names, whatever the artifact is called",
          "[runner]") {
  backends::RunnerConfig rc;
  rc.device = "cpu";
  rc.check_timeout = std::chrono::milliseconds(60'000);
  backends::RunnerClient runner(rc);
  const auto task = adversarial_task();
  const fs::path work = scratch("host-kind");
  backends::CompileOptions co;
  co.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";

  // A shared object under a Python module's name: kforge-host, as its backend says, passes it;
  // the file-name rule (no host given) would hand it to the Python host, which cannot import it.
  auto so = backends::compile(backends::get_backend("cpu"), read_file(kAdversarial / "correct/kernel.cpp"),
                              work / "cpu", co);
  INFO(so.summary);
  REQUIRE(so.ok());
  const fs::path disguised = work / "cpu" / "disguised.py";
  fs::copy_file(so.artifact, disguised, fs::copy_options::overwrite_existing);
  auto native = runner.check(task, disguised, 2, 7, HostKind::native);
  INFO(native.message);
  CHECK(native.outcome == Outcome::pass);
  auto python_host = runner.check(task, disguised, 2, 7, HostKind::python);
  INFO(python_host.message);
  CHECK(python_host.outcome != Outcome::pass);  // the Python host cannot import a shared object

  // A Python module handed to kforge-host is not run as Python: it fails to load there.
  auto py = backends::compile(backends::get_backend("triton"),
                              read_file(kAdversarial / "triton/correct/kernel.py"), work / "triton", co);
  INFO(py.summary);
  REQUIRE(py.ok());
  auto wrong_host = runner.check(task, py.artifact, 2, 7, HostKind::native);
  INFO(wrong_host.message);
  CHECK(wrong_host.outcome == Outcome::runtime_error);
  CHECK(wrong_host.sub_kind == "load");
  auto right_host = runner.check(task, py.artifact, 2, 7, HostKind::python);
  INFO(right_host.message);
  CHECK(right_host.outcome == Outcome::pass);
  CHECK(runner.workers_started() == 1);  // none of it took the judge down
}

TEST_CASE("host kind: a request without it is refused, whatever its artifact is called; so is an unknown one",
          "[runner]") {
  // The raw protocol, as an older client speaks it (RunnerClient always sends "host").
  const auto task = adversarial_task();
  const fs::path work = scratch("host-kind-raw");
  auto py = backends::compile(backends::get_backend("triton"),
                              read_file(kAdversarial / "triton/correct/kernel.py"), work / "triton", {});
  INFO(py.summary);
  REQUIRE(py.ok());
  sandbox::Spec spec;
  spec.argv = {backends::default_runner_path().string()};
  std::string error;
  auto child = sandbox::LineChild::start(spec, &error);
  REQUIRE(child);
  auto ready = child->read_line(std::chrono::milliseconds(120'000));
  REQUIRE(ready);
  REQUIRE(ready->find("\"ready\":true") != std::string::npos);
  auto load = ask(*child, {{"cmd", "load"},
                           {"task", task.id},
                           {"file", task.file.string()},
                           {"source", task.source},
                           {"device", "cpu"},
                           {"model_seed", 42},
                           {"module_mode", task.module_mode}});
  INFO(load.dump());
  REQUIRE(load.value("ok", false));
  const nlohmann::json check{{"cmd", "check"},
                             {"artifact", py.artifact.string()},
                             {"trials", 2},
                             {"seed", 7},
                             {"deadline_ms", 50'000}};
  auto legacy = ask(*child, check);
  INFO(legacy.dump());
  CHECK_FALSE(legacy.value("ok", true));  // kernel.py names no host: the file name decides nothing
  CHECK(legacy.value("error", "") == "protocol");
  CHECK(legacy.value("message", "").find("check request: field \"host\": missing") != std::string::npos);
  CHECK_FALSE(legacy.contains("outcome"));
  auto named = check;
  named["host"] = "python";
  auto explicit_python = ask(*child, named);
  INFO(explicit_python.dump());
  CHECK(explicit_python.value("outcome", "") == "pass");
  named["host"] = "shell";
  auto unknown = ask(*child, named);
  INFO(unknown.dump());
  CHECK_FALSE(unknown.value("ok", true));
  CHECK(unknown.value("error", "") == "protocol");  // named by the protocol's decoder
  CHECK(unknown.value("message", "").find("check request: field \"host\"") != std::string::npos);
  CHECK_FALSE(unknown.contains("outcome"));  // the judge's refusal, never a verdict
}
