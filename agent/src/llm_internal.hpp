// agent/src/llm_internal.hpp — private pieces of the LLM client layer (not installed).
//
// HttpChatClient owns the retry loop and the concurrency bound; the openai and anthropic
// providers only build the wire request and parse the wire reply (JSON stays in these files).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kforge/agent/llm.hpp"

namespace kforge::llm_detail {

/// What one HTTP POST produced.
struct HttpResponse {
  enum class Transport { ok, timeout, error };
  Transport transport = Transport::error;
  int status = 0;  ///< HTTP status, 0 when no response arrived
  std::string body;
  std::optional<double> retry_after_s;  ///< Retry-After (seconds) or retry-after-ms / 1000
  std::string error;                    ///< libcurl's message for transport failures
};

/// One blocking POST with a fresh libcurl easy handle. Thread-safe. Never follows redirects,
/// allows only http/https, bypasses proxies for loopback hosts. Times in milliseconds.
HttpResponse http_post(const std::string& url, const std::vector<std::string>& headers,
                       const std::string& body, int timeout_ms, int connect_timeout_ms);

/// One HTTP POST to make (times in milliseconds).
struct HttpJob {
  std::string url;
  std::vector<std::string> headers;
  std::string body;
  int timeout_ms = 300000, connect_timeout_ms = 10000;
};

/// libcurl's multi interface on one thread: every transfer of a client, however many, runs on
/// that thread (no thread per request). post() is thread-safe; `done` is called on the engine's
/// thread, once, when the transfer finishes (not at all when the engine is destroyed first), and
/// must be quick. A transfer starts no earlier than `start_at` (a retry's back-off).
class CurlMulti {
 public:
  CurlMulti();
  ~CurlMulti();
  CurlMulti(const CurlMulti&) = delete;
  CurlMulti& operator=(const CurlMulti&) = delete;
  void post(HttpJob job, std::chrono::steady_clock::time_point start_at,
            std::function<void(HttpResponse)> done);

 private:
  struct State;
  void loop();
  std::unique_ptr<State> st_;
  void* multi_ = nullptr;  // CURLM*
  std::thread thread_;
};

/// A provider reply decoded from a 2xx body.
struct ParsedReply {
  ChatStatus status = ChatStatus::malformed_reply;  ///< ok, malformed_reply or empty_reply
  std::string text, model, finish_reason, message;
  std::int64_t prompt_tokens = 0, completion_tokens = 0;
};

/// The wire form of one request.
struct WireRequest {
  std::string url;
  std::vector<std::string> headers;  ///< "Name: value"
  std::string body;
};

/// The server's error message from an error body ({"error": {"message": ...}} in both APIs),
/// or the start of the body when it has no such field.
std::string error_message_from_body(const std::string& body);

/// A counting semaphore with a run-time count.
class Semaphore {
 public:
  explicit Semaphore(int n) : count_(n) {}
  void acquire() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return count_ > 0; });
    --count_;
  }
  void release() {
    {
      std::lock_guard lk(mu_);
      ++count_;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_;
};

/// Base of the HTTP providers: retries, back-off, concurrency bound, cost.
class HttpChatClient : public LlmClient {
 public:
  HttpChatClient(std::string model, LlmConfig cfg);
  ChatResult chat(const ChatRequest& req) final;
  /// The same retries as chat(), on the client's CurlMulti (created on first use): no thread is
  /// held while a request is in flight or waits for its back-off.
  void chat_async(const ChatRequest& req, std::function<void(ChatResult)> done) final;
  const std::string& model() const final { return model_; }

 protected:
  virtual WireRequest build(const ChatRequest& req, const std::string& model) const = 0;
  virtual ParsedReply parse(const std::string& body) const = 0;
  /// A hint appended to the message of an HTTP error status (empty: none), e.g. a missing /v1.
  virtual std::string http_error_hint(int /*status*/) const { return {}; }
  /// The X-Kforge-* headers for req, when enabled.
  void add_task_headers(const ChatRequest& req, std::vector<std::string>& headers) const;

  std::string model_;
  LlmConfig cfg_;

 private:
  struct Call;
  /// What to do after one HTTP response of a call: nullopt when the call is finished (its
  /// ChatResult is final), else the back-off before the next try.
  std::optional<std::chrono::milliseconds> after_response(Call& c, const HttpResponse& resp) const;
  void finish_call(Call& c) const;
  void send(std::shared_ptr<Call> c, std::chrono::milliseconds delay);
  Semaphore slots_;
  std::once_flag engine_once_;
  std::unique_ptr<CurlMulti> engine_;
};

/// Builds the providers (llm_providers.cpp, llm_replay.cpp, llm_scripted.cpp). Arguments already validated.
std::unique_ptr<LlmClient> make_openai_client(std::string model, LlmConfig cfg);
std::unique_ptr<LlmClient> make_anthropic_client(std::string model, LlmConfig cfg);
std::unique_ptr<LlmClient> make_replay_client(std::string run_dir);
/// llm_scripted.cpp. Throws std::invalid_argument naming the file and field of a bad script.
std::unique_ptr<LlmClient> make_scripted_client(std::string file);

}  // namespace kforge::llm_detail
