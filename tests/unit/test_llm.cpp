// Tests of the LLM client layer against the real kforge-scripted-llm server on 127.0.0.1.
#include <curl/curl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "kforge/agent/llm.hpp"
#include "kforge/runs/run_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace kforge;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

fs::path make_temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "kforge-llm-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::string server_binary() {
  for (const char* rel : {"/tests/kforge-scripted-llm", "/tests/tools/kforge-scripted-llm"}) {
    const std::string p = std::string(KFORGE_BUILD_DIR) + rel;
    if (fs::exists(p)) return p;
  }
  return {};
}

std::size_t collect(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// The scripted server as a child process: started with a script, stopped with SIGTERM.
class ScriptedServer {
 public:
  /// Serves a script given as JSON (written to a temp file).
  explicit ScriptedServer(const json& script) : dir_(make_temp_dir()) {
    std::ofstream(dir_ / "script.json") << script.dump(2);
    start(dir_ / "script.json");
  }
  /// Serves a script file in place (its content_file paths are relative to it).
  explicit ScriptedServer(const fs::path& script_file) : dir_(make_temp_dir()) { start(script_file); }
  ~ScriptedServer() {
    stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  void start(const fs::path& script_file) {
    const std::string bin = server_binary();
    if (bin.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
      throw std::runtime_error("kforge-scripted-llm not built under " + std::string(KFORGE_BUILD_DIR) +
                               "/tests (build target kforge-scripted-llm)");
    }
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const std::string script_path = script_file.string(), log_path = (dir_ / "log.jsonl").string();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      execl(bin.c_str(), bin.c_str(), "--port", "0", "--script", script_path.c_str(), "--log",
            log_path.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    std::string line;
    pollfd p{fds[0], POLLIN, 0};
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (line.find('\n') == std::string::npos && Clock::now() < deadline) {
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    const std::string prefix = "listening on 127.0.0.1:";
    if (line.rfind(prefix, 0) != 0) {
      stop();
      std::error_code ec;
      fs::remove_all(dir_, ec);
      throw std::runtime_error("kforge-scripted-llm did not start; first line: '" + line + "'");
    }
    port_ = std::stoi(line.substr(prefix.size()));
  }

  /// SIGTERM and wait; returns the exit status (-1 if already stopped or killed by a signal).
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::vector<json> log() const {
    std::vector<json> out;
    std::ifstream in(dir_ / "log.jsonl");
    for (std::string l; std::getline(in, l);) {
      if (!l.empty()) out.push_back(json::parse(l));
    }
    return out;
  }

  json stats() const {
    std::string body;
    CURL* h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, (url() + "/stats").c_str());
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    const CURLcode rc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    if (rc != CURLE_OK) throw std::runtime_error("GET /stats failed");
    return json::parse(body);
  }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

LlmConfig fast_config(const ScriptedServer& srv, bool openai = true) {
  LlmConfig c;
  c.base_url = openai ? srv.url() + "/v1" : srv.url();
  c.api_key = "test-key";
  c.backoff_base_ms = 10;
  c.backoff_cap_ms = 50;
  c.max_retries = 3;
  c.timeout_ms = 5000;
  return c;
}

ChatRequest request(const std::string& task, int turn, int sample = 0) {
  ChatRequest r;
  r.messages = {{"system", "You write kernels."}, {"user", "write gelu please"}};
  r.task = task;
  r.turn = turn;
  r.sample = sample;
  return r;
}

}  // namespace

TEST_CASE("openai provider: a scripted reply round-trips with usage, cost and metadata", "[llm]") {
  ScriptedServer srv(json{{"replies",
                           {{{"task", "activation/gelu"},
                             {"turn", 2},
                             {"sample", 0},
                             {"content", "```cpp\nint main(){}\n```"}}}}});
  LlmConfig cfg = fast_config(srv);
  cfg.price_input_per_mtok = 2.0;
  cfg.price_output_per_mtok = 8.0;
  auto client = make_llm_client("openai:test-model", cfg);
  CHECK(client->provider() == "openai");
  CHECK(client->model() == "test-model");

  ChatRequest req = request("activation/gelu", 2);
  req.seed = 42;
  const ChatResult r = client->chat(req);
  INFO(r.message);
  REQUIRE(r.status == ChatStatus::ok);
  CHECK(r.text == "[scripted reply]\n```cpp\nint main(){}\n```");
  CHECK(r.model == "kforge-scripted");
  CHECK(r.finish_reason == "stop");
  CHECK(r.prompt_tokens == 6);      // "You write kernels." + "write gelu please": 6 words
  CHECK(r.completion_tokens == 6);  // "[scripted" "reply]" "```cpp" "int" "main(){}" "```"
  CHECK(r.attempts == 1);
  CHECK(r.http_status == 200);
  REQUIRE(r.cost_usd.has_value());
  CHECK(std::abs(*r.cost_usd - (6 * 2.0 + 6 * 8.0) / 1e6) < 1e-12);
  CHECK(r.latency_ms > 0.0);

  const auto log = srv.log();
  REQUIRE(log.size() == 1);
  CHECK(log[0]["auth"] == "bearer");
  CHECK(log[0]["model"] == "test-model");
  CHECK(log[0]["matched_by"] == "header");
  CHECK(log[0]["task"] == "activation/gelu");
  CHECK(log[0]["turn"] == 2);
  CHECK(log[0]["sample"] == 0);
  CHECK(log[0]["seed"] == 42);
  CHECK(log[0]["max_tokens"] == 4096);
  CHECK(log[0]["n_messages"] == 2);

  SECTION("a request the script does not cover is an HTTP error, not retried") {
    const ChatResult miss = client->chat(request("activation/relu", 1));
    CHECK(miss.status == ChatStatus::http_error);
    CHECK(miss.http_status == 404);
    CHECK(miss.attempts == 1);
    CHECK(miss.text.empty());
    CHECK_THAT(miss.message, Catch::Contains("no scripted reply for task 'activation/relu'"));
  }
  SECTION("a request the server rejects (400) is not retried") {
    ChatRequest empty = request("activation/gelu", 2);
    empty.messages.clear();
    const ChatResult bad = client->chat(empty);
    CHECK(bad.status == ChatStatus::http_error);
    CHECK(bad.http_status == 400);
    CHECK(bad.attempts == 1);
    CHECK_THAT(bad.message, Catch::Contains("messages"));
  }
  CHECK(srv.stop() == 0);  // SIGTERM: clean exit
}

TEST_CASE("429 with Retry-After is honoured and retried", "[llm]") {
  ScriptedServer srv(json{{"replies",
                           {{{"task", "t"}, {"fault", "429"}, {"retry_after", 1}, {"times", 1}},
                            {{"task", "t"}, {"content", "fine"}}}}});
  auto client = make_llm_client("openai:m", fast_config(srv));
  const auto t0 = Clock::now();
  const ChatResult r = client->chat(request("t", 1));
  const double elapsed = ms_since(t0);
  INFO(r.message);
  REQUIRE(r.status == ChatStatus::ok);
  CHECK(r.attempts == 2);
  CHECK(r.text == "[scripted reply]\nfine");
  CHECK(elapsed >= 950.0);  // Retry-After: 1 beats the 10 ms back-off
  CHECK(r.latency_ms >= 950.0);
  const auto log = srv.log();
  REQUIRE(log.size() == 2);
  CHECK(log[0]["fault"] == "429");
  CHECK(log[1]["fault"].is_null());
}

TEST_CASE("rate limits that never end come back as rate_limited", "[llm]") {
  ScriptedServer srv(json{{"default", {{"fault", "429"}, {"retry_after", 0}}}});
  LlmConfig cfg = fast_config(srv);
  cfg.max_retries = 2;
  const ChatResult r = make_llm_client("openai:m", cfg)->chat(request("t", 1));
  CHECK(r.status == ChatStatus::rate_limited);
  CHECK(r.http_status == 429);
  CHECK(r.attempts == 3);
  CHECK(r.text.empty());
  CHECK_THAT(r.message, Catch::Contains("rate limited"));
}

TEST_CASE("5xx replies are retried", "[llm]") {
  SECTION("two 500s, then the reply") {
    ScriptedServer srv(json{{"replies", {{{"fault", "500"}, {"times", 2}}, {{"content", "third time"}}}}});
    const ChatResult r = make_llm_client("openai:m", fast_config(srv))->chat(request("t", 1));
    INFO(r.message);
    REQUIRE(r.status == ChatStatus::ok);
    CHECK(r.attempts == 3);
    CHECK(r.text == "[scripted reply]\nthird time");
    CHECK(srv.stats()["faults"]["500"] == 2);
  }
  SECTION("500 forever: http_error after max_retries") {
    ScriptedServer srv(json{{"default", {{"fault", "500"}}}});
    LlmConfig cfg = fast_config(srv);
    cfg.max_retries = 1;
    const ChatResult r = make_llm_client("openai:m", cfg)->chat(request("t", 1));
    CHECK(r.status == ChatStatus::http_error);
    CHECK(r.http_status == 500);
    CHECK(r.attempts == 2);
    CHECK_THAT(r.message, Catch::Contains("HTTP 500"));
  }
}

TEST_CASE("a reply slower than the timeout is a timeout after the retries", "[llm]") {
  SECTION("always slow") {
    ScriptedServer srv(json{{"default", {{"fault", "slow"}, {"delay_ms", 3000}, {"content", "late"}}}});
    LlmConfig cfg = fast_config(srv);
    cfg.max_retries = 1;
    cfg.timeout_ms = 300;
    const auto t0 = Clock::now();
    const ChatResult r = make_llm_client("openai:m", cfg)->chat(request("t", 1));
    const double elapsed = ms_since(t0);
    CHECK(r.status == ChatStatus::timeout);
    CHECK(r.attempts == 2);
    CHECK(r.http_status == 0);
    CHECK(elapsed >= 600.0);
    CHECK(elapsed < 2500.0);  // the client gave up; it did not wait for the server
  }
  SECTION("slow once, then on time; the per-request timeout overrides the config") {
    ScriptedServer srv(
        json{{"replies", {{{"fault", "slow"}, {"delay_ms", 3000}, {"times", 1}}, {{"content", "ok"}}}}});
    ChatRequest req = request("t", 1);
    req.timeout_ms = 300;
    const ChatResult r = make_llm_client("openai:m", fast_config(srv))->chat(req);
    INFO(r.message);
    CHECK(r.status == ChatStatus::ok);
    CHECK(r.attempts == 2);
  }
}

TEST_CASE("malformed and empty replies are named statuses, retried once", "[llm]") {
  SECTION("malformed JSON") {
    ScriptedServer srv(json{{"default", {{"fault", "malformed"}}}});
    LlmConfig cfg = fast_config(srv);
    const ChatResult r = make_llm_client("openai:m", cfg)->chat(request("t", 1));
    CHECK(r.status == ChatStatus::malformed_reply);
    CHECK(r.attempts == 2);  // 1 + max_bad_reply_retries (default 1), though max_retries is 3
    CHECK(r.http_status == 200);
    CHECK(r.text.empty());
    cfg.max_bad_reply_retries = 0;
    CHECK(make_llm_client("openai:m", cfg)->chat(request("t", 1)).attempts == 1);
  }
  SECTION("malformed once, then a good reply") {
    ScriptedServer srv(json{{"replies", {{{"fault", "malformed"}, {"times", 1}}, {{"content", "good"}}}}});
    const ChatResult r = make_llm_client("openai:m", fast_config(srv))->chat(request("t", 1));
    CHECK(r.status == ChatStatus::ok);
    CHECK(r.attempts == 2);
  }
  SECTION("empty content") {
    ScriptedServer srv(json{{"default", {{"fault", "empty"}}}});
    const ChatResult r = make_llm_client("openai:m", fast_config(srv))->chat(request("t", 1));
    CHECK(r.status == ChatStatus::empty_reply);
    CHECK(r.attempts == 2);
    CHECK_THAT(r.message, Catch::Contains("no text content"));
  }
}

TEST_CASE("transport failures are transport_error values", "[llm]") {
  SECTION("the server drops the connection") {
    ScriptedServer srv(json{{"default", {{"fault", "disconnect"}}}});
    LlmConfig cfg = fast_config(srv);
    cfg.max_retries = 2;
    const ChatResult r = make_llm_client("openai:m", cfg)->chat(request("t", 1));
    CHECK(r.status == ChatStatus::transport_error);
    CHECK(r.attempts == 3);
    CHECK_FALSE(r.message.empty());
  }
  SECTION("nothing listens on the port") {
    LlmConfig cfg;
    {
      ScriptedServer srv(json::object());
      cfg = fast_config(srv);
      REQUIRE(srv.stop() == 0);
    }
    cfg.max_retries = 1;
    const ChatResult r = make_llm_client("openai:m", cfg)->chat(request("t", 1));
    CHECK(r.status == ChatStatus::transport_error);
    CHECK(r.attempts == 2);
    CHECK(r.http_status == 0);
  }
}

TEST_CASE("the client bounds its concurrent requests", "[llm]") {
  ScriptedServer srv(json{{"default", {{"content", "hi"}, {"delay_ms", 200}}}});
  LlmConfig cfg = fast_config(srv);
  cfg.max_concurrency = 2;
  auto client = make_llm_client("openai:m", cfg);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      if (client->chat(request("t", 1, i)).ok()) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = ms_since(t0);
  CHECK(ok == 6);
  const json st = srv.stats();
  CHECK(st["requests"] == 6);
  CHECK(st["max_in_flight"] == 2);
  CHECK(elapsed >= 590.0);  // 6 requests of 200 ms, two at a time
}

TEST_CASE("anthropic provider: messages shape, system field, headers", "[llm]") {
  ScriptedServer srv(json{{"replies", {{{"task", "reduce/sum"}, {"content", "sum kernel"}}}}});
  auto client = make_llm_client("anthropic:claude-test", fast_config(srv, false));
  CHECK(client->provider() == "anthropic");
  const ChatResult r = client->chat(request("reduce/sum", 1));
  INFO(r.message);
  REQUIRE(r.status == ChatStatus::ok);
  CHECK(r.text == "[scripted reply]\nsum kernel");
  CHECK(r.model == "kforge-scripted");
  CHECK(r.finish_reason == "end_turn");
  CHECK(r.prompt_tokens == 6);  // the system field counts too
  CHECK(r.completion_tokens == 4);
  auto log = srv.log();
  REQUIRE(log.size() == 1);
  CHECK(log[0]["api"] == "anthropic");
  CHECK(log[0]["auth"] == "x-api-key");
  CHECK(log[0]["anthropic_version"] == "2023-06-01");
  CHECK(log[0]["system"] == true);
  CHECK(log[0]["n_messages"] == 1);  // the system message left the list
  CHECK(log[0]["model"] == "claude-test");
  CHECK(log[0].contains("temperature"));

  SECTION("reasoning effort becomes a thinking budget") {
    ChatRequest req = request("reduce/sum", 1);
    req.reasoning_effort = "high";
    REQUIRE(client->chat(req).ok());
    log = srv.log();
    REQUIRE(log.size() == 2);
    CHECK(log[1]["thinking"]["type"] == "enabled");
    CHECK(log[1]["thinking"]["budget_tokens"] == 24576);
    CHECK(log[1]["max_tokens"] == 4096 + 24576);
    CHECK_FALSE(log[1].contains("temperature"));
  }
  SECTION("a missing key is rejected by the server and not retried") {
    LlmConfig cfg = fast_config(srv, false);
    cfg.api_key.clear();
    const char* saved = std::getenv("ANTHROPIC_API_KEY");
    const std::string saved_value = saved != nullptr ? saved : "";
    unsetenv("ANTHROPIC_API_KEY");
    const ChatResult r2 = make_llm_client("anthropic:claude-test", cfg)->chat(request("reduce/sum", 1));
    if (saved != nullptr) setenv("ANTHROPIC_API_KEY", saved_value.c_str(), 1);
    CHECK(r2.status == ChatStatus::http_error);
    CHECK(r2.http_status == 401);
    CHECK(r2.attempts == 1);
  }
}

TEST_CASE("openai reasoning requests and marker fallback", "[llm]") {
  ScriptedServer srv(json{{"replies",
                           {{{"task", "act/relu"}, {"turn", 3}, {"content", "relu v3"}},
                            {{"task", "act/relu"}, {"content", "relu any"}}}}});
  SECTION("reasoning_effort replaces max_tokens and sampling parameters") {
    ChatRequest req = request("act/relu", 3);
    req.reasoning_effort = "medium";
    const ChatResult r = make_llm_client("openai:o-test", fast_config(srv))->chat(req);
    REQUIRE(r.ok());
    const auto log = srv.log();
    REQUIRE(log.size() == 1);
    CHECK(log[0]["reasoning_effort"] == "medium");
    CHECK(log[0]["max_completion_tokens"] == 4096);
    CHECK_FALSE(log[0].contains("max_tokens"));
    CHECK_FALSE(log[0].contains("temperature"));
  }
  SECTION("without headers the server matches the task marker in the prompt") {
    LlmConfig cfg = fast_config(srv);
    cfg.send_task_headers = false;
    ChatRequest req;
    req.messages = {{"user", "task: act/relu\nturn: 3\nwrite it"}};
    const ChatResult r = make_llm_client("openai:m", cfg)->chat(req);
    REQUIRE(r.ok());
    CHECK(r.text == "[scripted reply]\nrelu v3");
    req.messages = {{"user", "task: act/relu\nturn: 1\nwrite it"}};
    CHECK(make_llm_client("openai:m", cfg)->chat(req).text == "[scripted reply]\nrelu any");
    const auto log = srv.log();
    REQUIRE(log.size() == 2);
    CHECK(log[0]["matched_by"] == "marker");
    CHECK(log[0]["turn"] == 3);
  }
}

TEST_CASE("replay provider serves recorded responses from a run directory", "[llm]") {
  const fs::path dir = make_temp_dir() / "run";
  {
    RunDir run = RunDir::create(dir, json{{"suite", "test"}});
    run.write_attempt_file("activation/gelu", 0, 2, "response.txt", "recorded gelu reply");
    run.write_attempt_file("activation/gelu", 1, 1, "response.txt", "  \n");
    AttemptRecord rec;
    rec.task = "activation/gelu";
    rec.sample = 0;
    rec.turn = 2;
    rec.model = "gpt-recorded";
    rec.prompt_tokens = 120;
    rec.completion_tokens = 80;
    rec.cost_usd = 0.5;
    run.append(rec);
  }
  auto client = make_llm_client("replay:" + dir.string(), LlmConfig{});
  CHECK(client->provider() == "replay");

  const ChatResult r = client->chat(request("activation/gelu", 2, 0));
  INFO(r.message);
  REQUIRE(r.status == ChatStatus::ok);
  CHECK(r.text == "recorded gelu reply");
  CHECK(r.prompt_tokens == 120);
  CHECK(r.completion_tokens == 80);
  REQUIRE(r.cost_usd.has_value());
  CHECK(*r.cost_usd == 0.5);
  CHECK(r.model == "gpt-recorded");
  CHECK(r.attempts == 1);

  const ChatResult missing = client->chat(request("activation/gelu", 3, 0));
  CHECK(missing.status == ChatStatus::transport_error);
  CHECK_THAT(missing.message, Catch::Contains("no recorded response"));
  CHECK(client->chat(request("activation/gelu", 1, 1)).status == ChatStatus::empty_reply);
  CHECK(client->chat(request("../gelu", 2, 0)).status == ChatStatus::transport_error);

  std::error_code ec;
  fs::remove_all(dir.parent_path(), ec);
}

TEST_CASE("make_llm_client rejects broken configuration", "[llm]") {
  try {
    make_llm_client("gemini:pro", LlmConfig{});
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("unknown provider 'gemini'"));
  }
  CHECK_THROWS_AS(make_llm_client("gpt-4o", LlmConfig{}), std::invalid_argument);
  CHECK_THROWS_AS(make_llm_client("openai:", LlmConfig{}), std::invalid_argument);
  CHECK_THROWS_AS(make_llm_client("replay:/nonexistent/kforge-run", LlmConfig{}), std::invalid_argument);
  LlmConfig bad;
  bad.base_url = "ftp://127.0.0.1/v1";
  CHECK_THROWS_AS(make_llm_client("openai:m", bad), std::invalid_argument);
  LlmConfig zero;
  zero.base_url = "http://127.0.0.1:1/v1";
  zero.max_concurrency = 0;
  CHECK_THROWS_AS(make_llm_client("openai:m", zero), std::invalid_argument);

  // A public endpoint needs a key; a local one does not.
  const char* saved = std::getenv("OPENAI_API_KEY");
  const std::string saved_value = saved != nullptr ? saved : "";
  unsetenv("OPENAI_API_KEY");
  CHECK_THROWS_AS(make_llm_client("openai:gpt-4o", LlmConfig{}), std::invalid_argument);
  LlmConfig local;
  local.base_url = "http://127.0.0.1:8000/v1/";
  auto c = make_llm_client("openai:llama3:8b", local);
  CHECK(c->model() == "llama3:8b");  // the model may contain colons
  if (saved != nullptr) setenv("OPENAI_API_KEY", saved_value.c_str(), 1);
}

TEST_CASE("retry_delay: Retry-After wins, otherwise capped full jitter", "[llm]") {
  LlmConfig c;  // base 500 ms, cap 30 s, Retry-After honoured up to 120 s
  using std::chrono::milliseconds;
  CHECK(retry_delay(0, 1.0, c, 0.5) == milliseconds(1000));
  CHECK(retry_delay(3, 0.25, c, 0.0) == milliseconds(250));
  CHECK(retry_delay(0, 1e6, c, 0.5) == milliseconds(120000));
  CHECK(retry_delay(0, std::nullopt, c, 0.0) == milliseconds(0));
  CHECK(retry_delay(0, std::nullopt, c, 0.5) == milliseconds(250));
  CHECK(retry_delay(2, std::nullopt, c, 0.5) == milliseconds(1000));    // 0.5 * 500 * 4
  CHECK(retry_delay(10, std::nullopt, c, 0.5) == milliseconds(15000));  // capped at 30 s
  CHECK(retry_delay(1000, std::nullopt, c, 0.999) <= milliseconds(30000));
  CHECK(to_string(ChatStatus::rate_limited) == "rate_limited");
  CHECK(to_string(ChatStatus::malformed_reply) == "malformed_reply");
}

TEST_CASE("the example scripts in tests/data/scripted load and serve", "[llm]") {
  const fs::path data = fs::path(KFORGE_TESTS_DIR) / "data" / "scripted";
  SECTION("repair_demo: a rate limit, then three turns read from content files") {
    ScriptedServer srv(data / "repair_demo.json");
    auto client = make_llm_client("openai:m", fast_config(srv));
    const ChatResult t1 = client->chat(request("activation/gelu_tanh", 1));
    REQUIRE(t1.ok());
    CHECK(t1.attempts == 2);  // 429 once
    CHECK_THAT(t1.text, Catch::Contains("kSqrt2OverPi * (v + 0.044715f"));
    CHECK_THAT(client->chat(request("activation/gelu_tanh", 2)).text, Catch::Contains("0.44715f"));
    CHECK_THAT(client->chat(request("activation/gelu_tanh", 3)).text,
               Catch::Contains("#pragma omp parallel for"));
    const ChatResult other = client->chat(request("activation/mish", 1));
    CHECK(other.text == "[scripted reply]\nI cannot help with this task.");
  }
  SECTION("faults: fixed usage numbers") {
    ScriptedServer srv(data / "faults.json");
    const ChatResult r =
        make_llm_client("openai:m", fast_config(srv))->chat(request("faults/fixed_usage", 1));
    REQUIRE(r.ok());
    CHECK(r.prompt_tokens == 1000);
    CHECK(r.completion_tokens == 250);
  }
}

TEST_CASE("chat_async: many requests in flight on one libcurl multi thread, retries included", "[llm]") {
  // Every reply is delayed 300 ms; 48 requests at once finish in about one delay, not 48, and the
  // process gains one thread (the client's multi thread), not one per request. The first request
  // of task b is a 500 first: retried on the multi thread after its back-off.
  ScriptedServer srv(
      json{{"replies",
            {{{"task", "b"}, {"fault", "500"}, {"times", 1}}, {{"content", "ok"}, {"delay_ms", 300}}}}});
  LlmConfig cfg = fast_config(srv);
  auto client = make_llm_client("openai:test-model", cfg);
  auto threads = [] {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
    return 0;
  };
  const int before = threads();
  constexpr int kN = 48;
  std::atomic<int> done{0}, ok{0}, retried{0};
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kN; ++i)
    client->chat_async(request(i == 0 ? "b" : "a", 1, i), [&](ChatResult r) {
      ok += r.ok();
      retried += r.attempts == 2;
      ++done;
    });
  int peak = threads();
  while (done.load() < kN && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30)) {
    peak = std::max(peak, threads());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(done.load() == kN);
  CHECK(ok.load() == kN);
  CHECK(retried.load() == 1);
  CHECK(peak - before <= 1);
  CHECK(s < 5.0);  // serially: 48 x 0.3 s = 14.4 s
  CHECK(srv.stats()["max_in_flight"].get<int>() > 8);
}
