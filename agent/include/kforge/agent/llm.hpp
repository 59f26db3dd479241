// kforge/agent/llm.hpp — the LLM client layer: one chat() (blocking) or chat_async() call per prompt.
//
// An LlmClient sends a chat request to one provider and returns a ChatResult *value*: every
// expected failure (HTTP error, rate limit, timeout, malformed or empty reply, network error)
// is a ChatStatus, never an exception. Exceptions are reserved for broken configuration
// (unknown provider, missing API key for a public endpoint, missing replay directory), thrown
// by make_llm_client() before any request is made.
//
// Providers:
//   openai    POST {base_url}/chat/completions, "Authorization: Bearer KEY". Default base URL
//             https://api.openai.com/v1, key from LlmConfig::api_key or $OPENAI_API_KEY.
//             Works with any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama): give
//             its base URL, e.g. http://127.0.0.1:8000/v1 (an HTTP 404 from a base URL not
//             ending in /v1 says "try --base-url <base>/v1").
//   anthropic POST {base_url}/v1/messages, "x-api-key: KEY", "anthropic-version: 2023-06-01".
//             Default base URL https://api.anthropic.com, key from $ANTHROPIC_API_KEY. System
//             messages go to the top-level `system` field.
//   replay    serves the responses recorded in an earlier run directory (docs/runs.md):
//             <run_dir>/attempts/<task>/<sample>/<turn>/response.txt, with the token counts,
//             cost and model of that attempt from <run_dir>/attempts.jsonl when present.
//             No network.
//   scripted  an offline model answering from a JSON script of replies keyed by task, turn and
//             sample (llm_scripted.cpp; examples/scripted-cpu.json), labelled "[scripted reply]".
//             No network.
//
// Traffic goes only to the configured base URL: redirects are not followed and only http/https
// are allowed. Each HTTP request uses its own libcurl easy handle.
//
// Thread-safety and ownership: a client is created once and shared. chat() is blocking and may
// be called from many threads at once; at most LlmConfig::max_concurrency of its HTTP requests
// are in flight at any time (a counting semaphore owned by the client; a request waiting in
// back-off does not hold a slot). chat_async() (the agent loop's) never blocks: the HTTP
// providers run every such request on one libcurl multi thread owned by the client, and the
// caller bounds how many are in flight.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

/// One chat message. role is "system", "user" or "assistant".
struct ChatMessage {
  std::string role;
  std::string content;
};

/// One request to the model. Fields left at their defaults fall back to the client's config.
struct ChatRequest {
  std::vector<ChatMessage> messages;
  std::string model;  ///< empty: the model named in the client spec ("openai:<model>")
  double temperature = 0.0;
  double top_p = 1.0;
  int max_tokens = 4096;             ///< completion budget (anthropic with thinking: added to it)
  std::optional<std::int64_t> seed;  ///< sent to openai-compatible servers; anthropic has none
  /// For reasoning models: "low", "medium", "high" (or, for anthropic, a token count such as
  /// "16000"). openai: sent as `reasoning_effort`, with `max_completion_tokens` instead of
  /// `max_tokens` and without temperature/top_p (reasoning models reject them). anthropic: sent
  /// as `thinking: {type: enabled, budget_tokens: B}` with low=2048, medium=8192, high=24576.
  std::optional<std::string> reasoning_effort;
  int timeout_ms = 0;  ///< whole-request timeout per HTTP attempt; 0: LlmConfig::timeout_ms

  // Episode coordinates. They name the recorded response for the replay provider and are
  // sent as X-Kforge-Task / X-Kforge-Sample / X-Kforge-Turn headers (see LlmConfig).
  // Conventions of runs/: sample is 0-based, turn is 1-based (0 = not part of an episode).
  std::string task;
  int sample = 0;
  int turn = 0;
};

/// How a chat call ended. Closed set; to_string() gives the snake_case name.
enum class ChatStatus {
  ok,               ///< a non-empty reply
  http_error,       ///< a non-2xx status other than 429 (after retries for 5xx/408)
  rate_limited,     ///< HTTP 429 on the last attempt
  timeout,          ///< the request exceeded its timeout on the last attempt
  malformed_reply,  ///< 2xx but the body is not the provider's JSON shape
  empty_reply,      ///< well-formed reply with no text content
  transport_error,  ///< connection refused, DNS, TLS, reset, replay file missing, ...
};

std::string_view to_string(ChatStatus s);

/// The result of chat(). Token counts are the provider's usage numbers (0 if not reported).
struct ChatResult {
  ChatStatus status = ChatStatus::transport_error;
  std::string text;           ///< the reply's text content (thinking blocks excluded)
  std::string model;          ///< the model the server says answered (may differ from asked)
  std::string finish_reason;  ///< "stop", "length", "end_turn", "max_tokens", ... if reported
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  double latency_ms = 0.0;         ///< wall time of the whole call, back-off sleeps included
  int attempts = 0;                ///< HTTP requests made (1 = no retry); 1 for replay
  std::optional<double> cost_usd;  ///< set when both prices are configured
  int http_status = 0;             ///< status of the last HTTP response; 0 if none arrived
  std::string message;             ///< for failures: what went wrong, in words

  bool ok() const { return status == ChatStatus::ok; }
};

/// Client configuration. Times in milliseconds, prices in USD per 1M tokens.
struct LlmConfig {
  std::string base_url;           ///< empty: the provider's public endpoint
  std::string api_key;            ///< empty: $OPENAI_API_KEY / $ANTHROPIC_API_KEY
  int max_retries = 5;            ///< retries after 429, 5xx, 408, timeouts and transport errors
  int max_bad_reply_retries = 1;  ///< retries after a malformed or empty reply
  int backoff_base_ms = 500;      ///< full-jitter exponential back-off: U(0, min(cap, base*2^i))
  int backoff_cap_ms = 30000;
  int max_retry_after_ms = 120000;  ///< a server's Retry-After is honoured up to this
  int timeout_ms = 300000;          ///< default per-attempt request timeout
  int connect_timeout_ms = 10000;
  int max_concurrency = 8;  ///< in-flight HTTP requests per client
  std::optional<double> price_input_per_mtok;
  std::optional<double> price_output_per_mtok;
  bool send_task_headers = true;  ///< send X-Kforge-Task/-Sample/-Turn (ignored by real servers)
  std::string anthropic_version = "2023-06-01";
};

/// A chat provider. See the file comment for the contract.
class LlmClient {
 public:
  virtual ~LlmClient() = default;
  /// Sends one request, retrying as configured. Never throws for expected failures.
  virtual ChatResult chat(const ChatRequest& req) = 0;
  /// The same request without blocking the caller: `done` is called exactly once with what
  /// chat() would have returned. HTTP providers run every request of the client on one thread
  /// (libcurl's multi interface; a retry's back-off is a timer there, holding no thread) and
  /// call `done` on it; this default (replay) calls chat() and `done` before returning. `done`
  /// must be quick. The caller bounds how many are in flight (LlmConfig::max_concurrency
  /// bounds chat() only). Requests still in flight when the client is destroyed are abandoned.
  virtual void chat_async(const ChatRequest& req, std::function<void(ChatResult)> done) { done(chat(req)); }
  /// "openai", "anthropic", "replay" or "scripted".
  virtual std::string_view provider() const = 0;
  /// The default model (the part after the colon of the spec; the run directory for replay).
  virtual const std::string& model() const = 0;
};

/// Builds a client from "provider:model", e.g. "openai:gpt-4o", "anthropic:claude-sonnet-4-5",
/// "openai:Qwen/Qwen2.5-Coder-32B-Instruct" (with a vLLM base_url), "replay:RUN_DIR",
/// "scripted:FILE". The model
/// may itself contain colons ("openai:llama3:8b"). Throws std::invalid_argument naming the
/// problem for: no colon, empty model, unknown provider, a public endpoint without an API key,
/// a replay directory that does not exist, a script that cannot be read or parsed, a base URL that is not http(s), a non-positive
/// max_concurrency or negative retry counts.
std::unique_ptr<LlmClient> make_llm_client(std::string_view spec, const LlmConfig& cfg);

/// Back-off before retry number `retry` (0 = first retry), in milliseconds. With a server's
/// Retry-After (seconds) the delay is that value, clamped to [0, max_retry_after_ms];
/// otherwise full jitter: u * min(backoff_cap_ms, backoff_base_ms * 2^retry), u in [0, 1).
/// Pure; exposed for tests.
std::chrono::milliseconds retry_delay(int retry, std::optional<double> retry_after_s, const LlmConfig& cfg,
                                      double u);

}  // namespace kforge
