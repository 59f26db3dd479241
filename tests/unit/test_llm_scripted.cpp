// Tests of the scripted provider (`--llm scripted:FILE`, llm_scripted.cpp) and of the /v1 hint on
// an HTTP 404 from an OpenAI-compatible base URL.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "catch.hpp"
#include "kforge/agent/llm.hpp"
#include "scratch_dir.hpp"
#include "scripted_server.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace kforge;

namespace {

ChatRequest ask(const std::string& task, int turn, int sample = 0) {
  ChatRequest r;
  r.messages = {{"system", "You write kernels."}, {"user", "write gelu please"}};
  r.task = task;
  r.turn = turn;
  r.sample = sample;
  return r;
}

fs::path write_script(const fs::path& dir, const json& script) {
  const fs::path p = dir / "script.json";
  std::ofstream(p) << script.dump(2);
  return p;
}

std::string error_of(const std::string& spec) {
  try {
    make_llm_client(spec, LlmConfig{});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no exception";
}

}  // namespace

TEST_CASE("scripted provider: replies keyed by task, turn and sample, with uses and a default", "[llm]") {
  const fs::path dir = scratch("llm-scripted");
  std::ofstream(dir / "t2.md") << "turn two ```cpp\nint x;\n```";
  const json script = {{"default", {{"content", "no kernel"}}},
                       {"replies",
                        {{{"task", "a/gelu"}, {"turn", 1}, {"content", "first"}, {"times", 1}},
                         {{"task", "a/gelu"}, {"turn", 1}, {"content", "first again"}},
                         {{"task", "a/gelu"}, {"turn", 2}, {"content_file", "t2.md"}},
                         {{"task", "a/gelu"},
                          {"sample", 1},
                          {"content", "sample one"},
                          {"prompt_tokens", 100},
                          {"completion_tokens", 7}}}}};
  auto client = make_llm_client("scripted:" + write_script(dir, script).string(), LlmConfig{});
  CHECK(client->provider() == "scripted");

  const ChatResult r1 = client->chat(ask("a/gelu", 1));
  REQUIRE(r1.ok());
  CHECK(r1.text == "[scripted reply]\nfirst");
  CHECK(r1.model == "kforge-scripted");
  CHECK(r1.prompt_tokens == 6);      // "You write kernels." + "write gelu please"
  CHECK(r1.completion_tokens == 3);  // "[scripted" "reply]" "first"
  CHECK(r1.attempts == 1);
  CHECK(client->chat(ask("a/gelu", 1)).text == "[scripted reply]\nfirst again");  // times: 1 used up
  CHECK(client->chat(ask("a/gelu", 1)).text == "[scripted reply]\nfirst again");
  CHECK(client->chat(ask("a/gelu", 2)).text == "[scripted reply]\nturn two ```cpp\nint x;\n```");
  const ChatResult s1 = client->chat(ask("a/gelu", 5, 1));
  CHECK(s1.text == "[scripted reply]\nsample one");
  CHECK(s1.prompt_tokens == 100);
  CHECK(s1.completion_tokens == 7);
  CHECK(client->chat(ask("b/relu", 1)).text == "[scripted reply]\nno kernel");

  SECTION("without a default, an unscripted request is a transport_error naming it") {
    auto strict = make_llm_client(
        "scripted:" + write_script(dir, {{"replies", {{{"task", "a/gelu"}, {"content", "x"}}}}}).string(),
        LlmConfig{});
    const ChatResult miss = strict->chat(ask("b/relu", 2, 3));
    CHECK(miss.status == ChatStatus::transport_error);
    CHECK(miss.text.empty());
    CHECK_THAT(miss.message, Catch::Contains("no reply for task 'b/relu' sample 3 turn 2"));
  }
}

TEST_CASE("scripted provider: a bad script is a configuration error naming the file and field", "[llm]") {
  const fs::path dir = scratch("llm-scripted-bad");
  CHECK_THAT(error_of("scripted:" + (dir / "missing.json").string()), Catch::Contains("cannot read"));
  std::ofstream(dir / "notjson.json") << "{";
  CHECK_THAT(error_of("scripted:" + (dir / "notjson.json").string()), Catch::Contains("not a JSON object"));
  const std::string f = write_script(dir, {{"replies", {{{"task", "a"}, {"fault", "429"}}}}}).string();
  CHECK_THAT(error_of("scripted:" + f), Catch::Contains(f + ".replies[0].fault: faults are served only"));
  write_script(dir, {{"replies", {{{"task", "a"}, {"contents", "x"}}}}});
  CHECK_THAT(error_of("scripted:" + f), Catch::Contains(".replies[0].contents: unknown field"));
  write_script(dir, {{"replies", {{{"task", "a"}, {"content_file", "nope.md"}}}}});
  CHECK_THAT(error_of("scripted:" + f), Catch::Contains(".replies[0].content_file: cannot read"));
  write_script(dir, {{"replies", {{{"task", "a"}, {"times", 0}}}}});
  CHECK_THAT(error_of("scripted:" + f), Catch::Contains(".replies[0].times: must be >= 1"));
  write_script(dir, {{"default", {{"task", "a"}}}});
  CHECK_THAT(error_of("scripted:" + f), Catch::Contains(".default.task: not allowed in default"));
  write_script(dir, json::object());
  CHECK_THAT(error_of("scripted:" + f), Catch::Contains("neither replies nor a default"));
}

TEST_CASE("scripted provider and the scripted server serve examples/scripted-cpu.json alike", "[llm]") {
  const fs::path example = fs::path(KFORGE_TESTS_DIR).parent_path() / "examples" / "scripted-cpu.json";
  auto local = make_llm_client("scripted:" + example.string(), LlmConfig{});
  kforge::test::ScriptedServer srv(example);
  LlmConfig cfg;
  cfg.base_url = srv.url() + "/v1";
  auto remote = make_llm_client("openai:m", cfg);
  for (const auto& [task, turn] : std::vector<std::pair<std::string, int>>{{"activation/gelu_tanh", 1},
                                                                           {"activation/gelu_tanh", 2},
                                                                           {"activation/gelu_tanh", 3},
                                                                           {"loss/huber_mean", 1},
                                                                           {"math/horner_polynomial", 2},
                                                                           {"matmul/gemm", 1}}) {
    INFO(task << " turn " << turn);
    const ChatResult a = local->chat(ask(task, turn)), b = remote->chat(ask(task, turn));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a.text == b.text);
    CHECK(a.model == b.model);
    CHECK(a.prompt_tokens == b.prompt_tokens);
    CHECK(a.completion_tokens == b.completion_tokens);
  }
  CHECK_THAT(local->chat(ask("activation/gelu_tanh", 1)).text, Catch::Contains("kSqrt2OverPi"));
}

TEST_CASE("openai provider: an HTTP 404 from a base URL without /v1 suggests adding it", "[llm]") {
  const fs::path dir = scratch("llm-404-hint");
  kforge::test::ScriptedServer srv(write_script(dir, {{"replies", {{{"task", "a"}, {"content", "x"}}}}}));
  LlmConfig cfg;
  cfg.max_retries = 0;
  cfg.base_url = srv.url();  // no /v1: the server answers 404 for an unscripted task
  const ChatResult bare = make_llm_client("openai:m", cfg)->chat(ask("b", 1));
  CHECK(bare.http_status == 404);
  CHECK_THAT(bare.message, Catch::Contains("try --base-url " + srv.url() + "/v1"));
  cfg.base_url = srv.url() + "/v1";
  const ChatResult v1 = make_llm_client("openai:m", cfg)->chat(ask("b", 1));
  CHECK(v1.http_status == 404);
  CHECK_THAT(v1.message, !Catch::Contains("try --base-url"));
}
