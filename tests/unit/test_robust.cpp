// [robust] no input loses a task (issue 23 §0) and KernelBench users can move in (§1): JSON-safe
// text, cuts on character boundaries, how a run ended, API keys, derived shape profiles, the
// out-of-memory hint. CLI-level tests spawning the kforge binary are in test_cli.cpp.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "catch.hpp"
#include "kforge/agent/attempt_record.hpp"
#include "kforge/agent/llm.hpp"
#include "kforge/backends/diagnostics.hpp"
#include "kforge/backends/runner_client.hpp"
#include "kforge/benchmarks/shapes.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/dtype.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/utf8.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/runs/run_status.hpp"
#include "scratch_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

/// `n` copies of a 3-byte CJK character (U+4E2D, "中").
std::string cjk(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += "\xE4\xB8\xAD";
  return s;
}

}  // namespace

TEST_CASE("json_safe keeps valid UTF-8 and writes each invalid byte as \\xNN", "[robust]") {
  CHECK(json_safe("plain ascii") == "plain ascii");
  CHECK(json_safe(cjk(3) + " \xF0\x9F\x98\x80") == cjk(3) + " \xF0\x9F\x98\x80");  // 3- and 4-byte forms
  CHECK(json_safe("bad \xFF byte") == "bad \\xFF byte");
  CHECK(json_safe(std::string("nul \0 kept", 10)) == std::string("nul \0 kept", 10));  // valid UTF-8
  CHECK(json_safe("\xC0\xAF") == "\\xC0\\xAF");                                        // overlong '/'
  CHECK(json_safe("\xED\xA0\x80") == "\\xED\\xA0\\x80");                               // a surrogate
  CHECK(json_safe("\xF4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80");                      // above U+10FFFF
  CHECK(json_safe("cut \xE4\xB8") == "cut \\xE4\\xB8");                                // a sequence cut short
  CHECK(json_safe("\x80" + cjk(1)) == "\\x80" + cjk(1));  // a stray continuation byte
  CHECK(first_invalid_utf8("ok \xFF") == 3);
  CHECK(is_valid_utf8(json_safe("\xFE\xFF\xE4")));
}

TEST_CASE("cuts never split a character: utf8_prefix, utf8_suffix, truncate_middle", "[robust]") {
  const std::string s = "a" + cjk(700) + "z";  // 2.1 KB
  for (std::size_t n = 0; n < 40; ++n) {
    INFO(n);
    auto p = utf8_prefix(s, n), q = utf8_suffix(s, n);
    CHECK(p.size() <= n);
    CHECK(p.size() + 2 >= std::min(n, s.size()));  // at most 2 bytes of a character dropped
    CHECK(is_valid_utf8(p));
    CHECK(q.size() <= n);
    CHECK(is_valid_utf8(q));
    CHECK(is_valid_utf8(truncate_middle(s, n + 10)));
  }
  CHECK(utf8_prefix(s, 5000) == s);
  const std::string t = truncate_middle(s, 400);
  CHECK(t.find("bytes truncated") != std::string::npos);
  CHECK(t.size() < 460);
  CHECK(is_valid_utf8(t));
}

TEST_CASE("dump_json never throws on bytes and keeps the rest", "[robust]") {
  nlohmann::json j{{"message", "stray '\xFF' in program"},
                   {"nested", {{"list", {"ok", "\xC3"}}, {"key \xFE", 1}}},
                   {"n", 3}};
  CHECK_THROWS(j.dump());  // what the records hit before
  std::string text;
  REQUIRE_NOTHROW(text = dump_json(j, 2));
  auto back = nlohmann::json::parse(text);
  CHECK(back["message"] == "stray '\\xFF' in program");
  CHECK(back["nested"]["list"][1] == "\\xC3");
  CHECK(back["nested"].contains("key \\xFE"));
  CHECK(back["n"] == 3);
  nlohmann::json fine{{"a", cjk(2)}};
  CHECK(dump_json(fine) == fine.dump());
}

TEST_CASE("a compiler error line with over 2 KB of CJK text is parsed, summarised and recorded", "[robust]") {
  const std::string ident = cjk(1000);  // 3000 bytes: longer than the parser's line cap
  const std::string log = "kernel.cpp:3:5: error: '" + ident + "' was not declared in this scope\n";
  const std::string source = "#include <x>\n\n    " + ident + " = 1;\n";
  auto diags = backends::parse_diagnostics(log, source, "kernel.cpp");
  REQUIRE(!diags.empty());
  CHECK(is_valid_utf8(diags[0].message));
  const std::string summary = backends::summarise(diags, 5, 600);
  CHECK(is_valid_utf8(summary));
  CHECK(summary.find("kernel.cpp:3:5") != std::string::npos);

  // The record's message is the first line cut to 400 bytes (agent::fill_record): still text.
  AttemptRecord r;
  r.task = "activation/gelu_tanh";
  r.outcome = Outcome::compile_error;
  r.message = truncate_middle(split_lines(summary).front(), 400);
  CHECK(is_valid_utf8(r.message));
  auto back = attempt_from_json(nlohmann::json::parse(to_jsonl(r)));
  CHECK(back.message == r.message);
}

TEST_CASE("RunDir writes records and result files holding any bytes", "[robust]") {
  const fs::path dir = scratch("robust_rundir");
  RunDir rd = RunDir::create(dir / "run", {{"config", {{"note", "manifest \xFF"}}}});
  AttemptRecord r;
  r.task = "t";
  r.outcome = Outcome::compile_error;
  r.message = "stray '\\377' \xFF\xFE in program";
  rd.append(r);
  const std::string binary(
      "\x7F"
      "ELF\0\xFF\xFE\x80 kernel",
      15);
  auto p = rd.write_attempt_json("t", 0, 1, "result.json", {{"message", binary}, {"compile_log", r.message}});
  auto j = nlohmann::json::parse(read_file(p));
  CHECK(j["message"].get<std::string>().find("\\xFF\\xFE\\x80 kernel") != std::string::npos);
  auto recs = load_attempts(dir / "run").records;
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].message == "stray '\\377' \\xFF\\xFE in program");
  CHECK(nlohmann::json::parse(read_file(dir / "run/manifest.json"))["config"]["note"] == "manifest \\xFF");
}

TEST_CASE("run_status: scored records, episodes paused at an llm_error, the last LLM error", "[robust]") {
  auto rec = [](std::string task, int sample, int turn, Outcome o, std::string msg = "") {
    AttemptRecord r;
    r.task = std::move(task);
    r.sample = sample;
    r.turn = turn;
    r.outcome = o;
    r.message = std::move(msg);
    return r;
  };
  std::vector<AttemptRecord> v{rec("a", 0, 1, Outcome::llm_error, "HTTP 500 first"),
                               rec("b", 0, 1, Outcome::llm_error, "HTTP 401 invalid key")};
  RunStatus st = run_status(v);
  CHECK(st.records == 2);
  CHECK(st.scored == 0);
  CHECK(st.paused_episodes == 2);
  CHECK(st.last_llm_error == "HTTP 401 invalid key");
  CHECK(st.last_llm_error_task == "b");
  // A resume asked them again: a later record of the episode supersedes its llm_error.
  v.push_back(rec("a", 0, 1, Outcome::compile_error));
  v.push_back(rec("b", 0, 1, Outcome::pass));
  st = run_status(v);
  CHECK(st.scored == 2);
  CHECK(st.paused_episodes == 0);
  // Only infra_errors: nothing scored, nothing paused.
  st = run_status({rec("c", 0, 1, Outcome::infra_error)});
  CHECK(st.scored == 0);
  CHECK(st.paused_episodes == 0);
}

TEST_CASE("an API key with control bytes is refused before any request", "[robust]") {
  LlmConfig cfg;
  cfg.base_url = "http://127.0.0.1:9";
  cfg.api_key = "sk-abc\n";
  try {
    (void)make_llm_client("openai:m", cfg);
    FAIL("a key with a newline was accepted");
  } catch (const std::invalid_argument& e) {
    const std::string w = e.what();
    CHECK(w.find("control byte (0x0A at offset 6") != std::string::npos);
    CHECK(w.find("sk-abc") == std::string::npos);  // the key itself is never printed
  }
  cfg.api_key = "sk-\x7f";
  CHECK_THROWS_AS(make_llm_client("anthropic:m", cfg), std::invalid_argument);
  cfg.api_key = "sk-fine_KEY.123";
  CHECK_NOTHROW(make_llm_client("openai:m", cfg));
}

namespace {
const char* kReluSource = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)

batch_size = 4096
dim = 393216

def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # no special initialization inputs needed
)";
}  // namespace

TEST_CASE("dtype_bytes: one table for the runner's dtype names and a task's aliases", "[robust][shapes]") {
  CHECK(dtype_bytes("float32") == 4);
  CHECK(dtype_bytes("float") == 4);        // torch.float in a task's source
  CHECK(dtype_bytes("half") == 2);         // the shapes reader's alias
  CHECK(dtype_bytes("uint16") == 2);       // was 4 in the shapes reader
  CHECK(dtype_bytes("complex128") == 16);  // was 4 in the shapes reader
  CHECK(dtype_bytes("float8_e4m3fn") == 1);
  CHECK(dtype_bytes("long") == 8);  // was 4 in TritonBench's in-place note
  CHECK(dtype_bytes("bool") == 1);
  CHECK(dtype_bytes("no_such_dtype") == 4);
}

TEST_CASE("estimate_inputs reads get_inputs() shapes from the constants", "[robust]") {
  auto e = estimate_inputs(kReluSource);
  REQUIRE(e.ok);
  REQUIRE(e.inputs.size() == 1);
  CHECK(e.inputs[0].dims == std::vector<std::int64_t>{4096, 393216});
  CHECK(e.bytes == 4096.0 * 393216 * 4);  // 6.4 GB: level1/19_ReLU at its real shape
  CHECK(e.describe() == "(4096, 393216) float32");

  const std::string conv = R"(
batch_size = 16
in_channels = 3
height = 256
kernel_size = 3
input_shape = (in_channels, height * 2)
N = 2 ** 10

def get_inputs():
    idx = torch.randint(0, 10, (batch_size,))
    w = torch.rand(batch_size, *input_shape, dtype=torch.float16)
    return [torch.zeros(N // 4, kernel_size), idx, w]
)";
  e = estimate_inputs(conv);
  REQUIRE(e.ok);
  REQUIRE(e.inputs.size() == 3);
  CHECK(e.inputs[0].dims == std::vector<std::int64_t>{16});
  CHECK(e.inputs[0].dtype == "int64");
  CHECK(e.inputs[1].dims == std::vector<std::int64_t>{16, 3, 512});
  CHECK(e.inputs[1].elem_bytes == 2);
  CHECK(e.inputs[2].dims == std::vector<std::int64_t>{256, 3});
  CHECK(e.describe() == "(16,) int64; (16, 3, 512) float16; (256, 3) float32");

  auto unknown = estimate_inputs("n = 4\ndef get_inputs():\n    return [torch.randn(n, helper())]\n");
  CHECK_FALSE(unknown.ok);
  CHECK(unknown.note.find("not understood") != std::string::npos);
}

TEST_CASE("scaled profiles: integer constants of get_inputs() divided by a power of two to a byte target",
          "[robust]") {
  auto ci = scale_profile(kReluSource, "ci");
  REQUIRE(ci);
  CHECK(ci->factor == 128);  // 64: 64 x 6144 floats are 1.5 MiB, over the target
  CHECK(ci->changes == std::vector<std::string>{"batch_size 4096->32", "dim 393216->3072"});
  CHECK(ci->source.find("batch_size = 32  # profile ci\ndim = 3072  # profile ci\n") != std::string::npos);
  CHECK(ci->after.bytes <= 1024.0 * 1024);
  CHECK(ci->before.bytes == 4096.0 * 393216 * 4);
  auto small = scale_profile(kReluSource, "small");
  REQUIRE(small);
  CHECK(small->after.bytes <= 64.0 * 1024 * 1024);
  CHECK(small->after.bytes > 16.0 * 1024 * 1024);    // the smallest power of two that fits, not more
  CHECK_FALSE(scale_profile(kReluSource, "large"));  // no rule for other names

  // Through the task model: a KernelBench-layout fixture task has no profile of its own.
  Suite s = load_suite(fs::path(KFORGE_TESTS_DIR) / "fixtures/kernelbench");
  const Task* t = s.find("level1/19_ReLU");
  REQUIRE(t);
  REQUIRE(t->profiles.empty());
  CHECK(has_profile(*t, "ci"));
  auto src = apply_profile(*t, "ci");
  REQUIRE(src);
  CHECK(*src == t->source);  // 8 x 16 floats: already under the target, nothing to change
  Task big = *t;
  big.source = kReluSource;
  big.constants = {{"batch_size", "4096", 11}, {"dim", "393216", 12}};
  src = apply_profile(big, "ci");
  REQUIRE(src);
  CHECK(src->find("batch_size = 32  # profile ci\ndim = 3072  # profile ci\n") != std::string::npos);
  CHECK(estimate_inputs(*src).bytes == 32.0 * 3072 * 4);
}

TEST_CASE("a worker killed while loading says it likely ran out of memory and what the task needs",
          "[robust]") {
  backends::TaskRef ref;
  ref.id = "level1/19_ReLU";
  ref.input_bytes_estimate = 4096.0 * 393216 * 4;
  const std::string hint = backends::load_killed_hint(ref);
  CHECK(hint.find("likely ran out of memory") != std::string::npos);
  CHECK(hint.find("about 6.00 GiB") != std::string::npos);
  CHECK(hint.find("--profile small") != std::string::npos);
  ref.input_bytes_estimate = 0;
  CHECK(backends::load_killed_hint(ref).find("unknown") != std::string::npos);
}
