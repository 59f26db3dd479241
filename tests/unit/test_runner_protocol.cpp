// The judge's typed protocol (runner_protocol.hpp): every command and reply round-trips through
// its JSON mapping; a message that does not fit its type is a judge_protocol failure naming the
// field, never an exception; the typed failure (unjudgeable) travels in the error reply.
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "kforge/backends/runner_client.hpp"
#include "kforge/backends/runner_protocol.hpp"
#include "kforge/sandbox/subprocess.hpp"

using namespace kforge;
using namespace kforge::backends;
using json = nlohmann::json;
namespace pr = kforge::backends::protocol;

namespace {

pr::Candidate candidate() {
  return {"/tmp/k/kernel.py", HostKind::python, "aten::add,aten::mul"};
}

/// One request of every command, each field away from its default.
std::vector<pr::Request> every_request() {
  pr::LoadRequest load;
  load.task = "level1/19_ReLU";
  load.file = "19_ReLU.py";
  load.source = "import torch\n";
  load.device = "cuda:1";
  load.model_seed = 5;
  load.flops = "2*N";
  load.bytes = "8*N";
  load.module_mode = "train";
  load.probe_seed = 9;
  load.profile_seed = 3001;
  pr::CheckRequest check;
  check.candidate = candidate();
  check.trials = 3;
  check.seed = 11;
  check.deadline_ms = 1234;
  check.tolerances = {{"float32", {1e-4, 1e-3}}, {"*", {0.1, 0.2}}};
  check.perturb_parameters = false;
  check.wide_inputs = false;
  pr::BenchRequest bench;
  bench.candidate = candidate();
  bench.reps = 7;
  bench.compile_baseline = true;
  bench.peak_bytes_per_s = 1e12;
  bench.reference_before = false;
  pr::TestblockRequest tb;
  tb.candidate = candidate();
  tb.source = "def f(): pass";
  tb.test_source = "def test_f(): pass";
  tb.test_function = "test_f";
  tb.entries = {"f", "g"};
  tb.device = "cpu";
  pr::ProfileSetupRequest profile;
  profile.candidate = candidate();
  profile.dir = "/tmp/p";
  profile.seed = 4;
  std::vector<pr::Request> v{pr::HelloRequest{},
                             load,
                             pr::ReferenceRequest{3, 8},
                             check,
                             bench,
                             pr::PeaksRequest{"cuda:0"},
                             pr::PrewarmRequest{HostKind::python, "cuda:0"},
                             profile,
                             tb,
                             pr::TritonBenchRequest{12},
                             pr::QuitRequest{}};
  v[1].id = "1.2";
  v[1].timed_lock_shared = true;
  v[4].timed_lock_held = true;
  return v;
}

template <class R>
void round_trips(const R& reply) {
  const json wire = pr::encode(reply);
  const Expected<R> back = pr::decode_reply<R>(wire);
  INFO(wire.dump());
  REQUIRE(back.ok());
  CHECK(pr::encode(back.value()) == wire);
}

}  // namespace

TEST_CASE("every judge command round-trips through the protocol, under its own name", "[protocol]") {
  const auto requests = every_request();
  REQUIRE(requests.size() == 11);  // one per Command
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const pr::Request& q = requests[i];
    CHECK(static_cast<std::size_t>(q.command()) == i);
    const json wire = pr::encode(q);
    INFO(wire.dump());
    CHECK(wire.at("cmd") == std::string(pr::to_string(q.command())));
    CHECK(pr::command_from_string(wire.at("cmd").get<std::string>()) == q.command());
    const Expected<pr::Request> back = pr::decode_request(wire);
    REQUIRE(back.ok());
    CHECK(back->command() == q.command());
    CHECK(back->id == q.id);
    CHECK(pr::encode(back.value()) == wire);
  }
  // The host is the backend's to name (a request without it: below).
  const auto minimal =
      pr::decode_request(json{{"cmd", "check"}, {"artifact", "/a/kernel.py"}, {"host", "native"}});
  REQUIRE(minimal.ok());
  CHECK(std::get<pr::CheckRequest>(minimal->body).candidate.host == HostKind::native);
  CHECK(std::get<pr::CheckRequest>(minimal->body).trials == 5);  // the documented default
}

TEST_CASE("every judge reply round-trips through the protocol", "[protocol]") {
  pr::HelloReply hello;
  hello.libtorch = "2.15.0";
  hello.triton = "3.6.0";
  hello.reference_tf32_cudnn = true;
  hello.cuda_available = true;
  hello.devices = {{0, "H200", "9.0", 1 << 30, "cuda-0000:01:00.0"}};
  hello.torch_cuda = "13.0";
  hello.timed_lock_unavailable = "read-only";
  round_trips(hello);
  pr::LoadReply load;
  load.inputs = {{"x", "input", "float32", {2, 3}}};
  load.outputs = {{"out", "output", "float32", {2, 3}}};
  load.flops = 6;
  load.flops_source = "declared";
  load.cached = true;
  load.tasks_held = 2;
  round_trips(load);
  round_trips(pr::ReferenceReply{{1.5, 2.5}});
  pr::CheckReply check;
  check.outcome = Outcome::output_mismatch;
  check.sub_kind = "values";
  check.trials = 5;
  check.trials_passed = 2;
  check.worst_index = {1, 2};
  check.expected = 1;
  check.actual = 2;
  check.phases_ms = {{"exchange_ms", 1.5}};
  check.checks = {"5 trials"};
  check.correct = false;
  check.correct_message = "wrong";
  check.trial = {3, 7, "wider inputs", 1006, 3.2};
  round_trips(check);
  pr::BenchReply bench;
  bench.outcome = Outcome::pass;
  bench.timed_candidate = true;
  bench.candidate = {1, 0.9, 1.1, 1, 0.8, 0.05, 100, 10};
  bench.candidate_samples = {1, 1.1};
  bench.reference_before = bench.candidate;
  bench.speedup_ci_low = 1.1;
  bench.speedup_ci_high = 1.3;
  bench.host_reported_ms = {{"calls_ms", 0.5}};
  bench.timing_anomaly = "too fast";
  bench.timing_anomaly_kind = "launch_floor";
  bench.flags = {"f"};
  round_trips(bench);
  pr::BenchReply failed;
  failed.outcome = Outcome::output_mismatch;
  failed.sub_kind = "bench_only";
  round_trips(failed);
  round_trips(pr::PeaksReply{"cuda:0", 4e12, 6e13, "fills"});
  round_trips(pr::PrewarmReply{true});
  round_trips(pr::ProfileSetupReply{{"kforge-host", "--profile"}, {"kforge-runner", "--profile-reference"}});
  round_trips(pr::TritonBenchReply{0.25});
}

TEST_CASE("a malformed judge message is a judge_protocol failure naming the command and the field",
          "[protocol]") {
  auto protocol_error = [](const auto& e) {
    REQUIRE_FALSE(e.ok());
    CHECK(e.failure().kind == FailureKind::judge);
    CHECK(e.failure().sub_kind == "judge_protocol");
    return e.failure().message;
  };
  json reply = pr::encode(pr::CheckReply{});
  reply.erase("outcome");  // a missing field
  CHECK(protocol_error(pr::decode_reply<pr::CheckReply>(reply)) == "check reply: field \"outcome\": missing");
  reply = pr::encode(pr::CheckReply{});
  reply["trials_passed"] = "two";  // the wrong type
  CHECK(protocol_error(pr::decode_reply<pr::CheckReply>(reply)) ==
        "check reply: field \"trials_passed\": expected an integer, got string");
  pr::LoadReply one_input;
  one_input.inputs = {{"x", "input", "float32", {2}}};
  json load = pr::encode(one_input);
  load["inputs"][0]["shape"] = {2, "three"};  // inside an array of objects
  CHECK(protocol_error(pr::decode_reply<pr::LoadReply>(load)) ==
        "load reply: field \"inputs[0].shape[1]\": expected an integer, got string");
  CHECK(protocol_error(pr::decode_reply<pr::TritonBenchReply>(json{{"ok", true}})) ==
        "triton_bench reply: field \"ms\": missing");
  CHECK(protocol_error(pr::decode_reply<pr::PeaksReply>(json::array())).find("not a JSON object") !=
        std::string::npos);
  CHECK(protocol_error(pr::decode_reply<pr::PeaksReply>(json{{"ok", false}, {"error", "model_did_it"}}))
            .find("field \"error\": unknown value 'model_did_it'") != std::string::npos);
  // Requests: an unknown command, a missing field, a field of the wrong type.
  CHECK(protocol_error(pr::decode_request(json{{"cmd", "fly"}})) == "request: unknown command 'fly'");
  CHECK(protocol_error(pr::decode_request(json{{"trials", 3}})) == "request: field \"cmd\": missing");
  CHECK(protocol_error(pr::decode_request(json{{"cmd", "check"}, {"trials", 3}})) ==
        "check request: field \"artifact\": missing");
  CHECK(protocol_error(pr::decode_request(json{{"cmd", "bench"}, {"reps", "many"}})) ==
        "bench request: field \"reps\": expected an integer, got string");
  // No "host": refused, whatever the artifact's name (no file-suffix rule).
  CHECK(protocol_error(pr::decode_request(json{{"cmd", "check"}, {"artifact", "/a/kernel.py"}})) ==
        "check request: field \"host\": missing");
  CHECK(protocol_error(pr::decode_request(json{{"cmd", "check"}, {"artifact", "k.so"}, {"host", "shell"}}))
            .find("check request: field \"host\"") == 0);
  CHECK(protocol_error(pr::decode_request(json{
            {"cmd", "check"}, {"artifact", "k.so"}, {"host", "native"}, {"tolerances", {{"float32", 1}}}})) ==
        "check request: field \"tolerances.float32\": expected [atol, rtol], got number");
}

TEST_CASE("the judge's typed failure travels in its error reply: unjudgeable is the reference's",
          "[protocol]") {
  const json wire = pr::encode(pr::ErrorReply{JudgeError::unjudgeable, "its two runs disagree"});
  CHECK(wire.at("error") == "unjudgeable");
  const auto check = pr::decode_reply<pr::CheckReply>(wire);
  REQUIRE_FALSE(check.ok());
  CHECK(check.failure().kind == FailureKind::reference);
  CHECK(check.failure().sub_kind == "unjudgeable");
  CHECK(check.failure().message == "its two runs disagree");  // no prefix needed to type it
  const auto load = pr::decode_reply<pr::LoadReply>(wire);
  REQUIRE_FALSE(load.ok());
  CHECK(load.failure().sub_kind == "unjudgeable");
  const auto e = pr::error_reply(wire);
  REQUIRE(e.has_value());
  CHECK(e->error == JudgeError::unjudgeable);
  // Every JudgeError names itself on the wire and back.
  for (JudgeError k : {JudgeError::python_exception, JudgeError::runner, JudgeError::protocol,
                       JudgeError::reference_failed, JudgeError::unjudgeable})
    CHECK(judge_error_from_string(to_string(k)) == k);
  const auto runner =
      pr::decode_reply<pr::CheckReply>(pr::encode(pr::ErrorReply{JudgeError::runner, "boom"}));
  REQUIRE_FALSE(runner.ok());
  CHECK(runner.failure().kind == FailureKind::judge);
  CHECK(runner.failure().sub_kind == "runner");
}

TEST_CASE("kforge-runner answers an unknown command or a malformed request with a protocol error naming it",
          "[protocol][runner]") {
  sandbox::Spec spec;
  spec.argv = {default_runner_path().string()};
  std::string error;
  auto child = sandbox::LineChild::start(spec, &error);
  REQUIRE(child);
  auto ready = child->read_line(std::chrono::milliseconds(120'000));
  REQUIRE(ready);
  REQUIRE(pr::is_ready_line(json::parse(*ready)));
  auto ask = [&](const json& req) {
    REQUIRE(child->write_line(req.dump()));
    auto line = child->read_line(std::chrono::milliseconds(120'000));
    REQUIRE(line);
    return json::parse(*line);
  };
  const json unknown = ask({{"cmd", "fly"}, {"id", "a"}});
  INFO(unknown.dump());
  CHECK(unknown.at("id") == "a");  // still answered to its request
  const auto e = pr::error_reply(unknown);
  REQUIRE(e.has_value());
  CHECK(e->error == JudgeError::protocol);
  CHECK(e->message == "request: unknown command 'fly'");
  const json missing = ask({{"cmd", "check"}, {"id", "b"}, {"trials", 2}});
  INFO(missing.dump());
  const auto decoded = pr::decode_reply<pr::CheckReply>(missing);
  REQUIRE_FALSE(decoded.ok());
  CHECK(decoded.failure().kind == FailureKind::judge);
  CHECK(decoded.failure().message == "check request: field \"artifact\": missing");
  // The worker is still alive and typed: hello decodes.
  pr::Request hello(pr::HelloRequest{});
  hello.id = "c";
  const auto h = pr::decode_reply<pr::HelloReply>(ask(pr::encode(hello)));
  REQUIRE(h.ok());
  CHECK_FALSE(h->torch.empty());
  child->write_line(pr::encode(pr::Request(pr::QuitRequest{})).dump());
}
