// agent/src/llm.cpp — ChatStatus names, the retry loop shared by HTTP providers, the factory.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <thread>

#include "kforge/common/utf8.hpp"
#include "llm_internal.hpp"

namespace kforge {

std::string_view to_string(ChatStatus s) {
  switch (s) {
    case ChatStatus::ok:
      return "ok";
    case ChatStatus::http_error:
      return "http_error";
    case ChatStatus::rate_limited:
      return "rate_limited";
    case ChatStatus::timeout:
      return "timeout";
    case ChatStatus::malformed_reply:
      return "malformed_reply";
    case ChatStatus::empty_reply:
      return "empty_reply";
    case ChatStatus::transport_error:
      return "transport_error";
  }
  return "unknown";
}

std::chrono::milliseconds retry_delay(int retry, std::optional<double> retry_after_s, const LlmConfig& cfg,
                                      double u) {
  if (retry_after_s) {
    const double ms = std::clamp(*retry_after_s * 1000.0, 0.0, static_cast<double>(cfg.max_retry_after_ms));
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(ms)));
  }
  const double cap = std::max(0, cfg.backoff_cap_ms);
  const double exp =
      std::ldexp(static_cast<double>(std::max(0, cfg.backoff_base_ms)), std::clamp(retry, 0, 60));
  const double ceiling = std::min(cap, exp);
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::clamp(u, 0.0, 1.0) * ceiling));
}

namespace llm_detail {

std::string error_message_from_body(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    auto e = j.find("error");
    if (e != j.end()) {
      if (e->is_object()) {
        auto m = e->find("message");
        if (m != e->end() && m->is_string()) return m->get<std::string>();
      } else if (e->is_string()) {
        return e->get<std::string>();
      }
    }
  }
  std::string head(utf8_prefix(body, 300));  // whole characters
  if (body.size() > 300) head += "...";
  return head.empty() ? "(empty body)" : head;
}

HttpChatClient::HttpChatClient(std::string model, LlmConfig cfg)
    : model_(std::move(model)), cfg_(std::move(cfg)), slots_(cfg_.max_concurrency) {}

void HttpChatClient::add_task_headers(const ChatRequest& req, std::vector<std::string>& headers) const {
  if (!cfg_.send_task_headers || req.task.empty()) return;
  // Header values must not carry line breaks; task ids never do, but be safe.
  std::string task = req.task;
  task.erase(std::remove_if(task.begin(), task.end(), [](char c) { return c == '\r' || c == '\n'; }),
             task.end());
  headers.push_back("X-Kforge-Task: " + task);
  headers.push_back("X-Kforge-Sample: " + std::to_string(req.sample));
  headers.push_back("X-Kforge-Turn: " + std::to_string(req.turn));
}

namespace {

double uniform01() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

enum class Next { done, retry_transient, retry_bad_reply };

}  // namespace

/// One chat call in progress: its wire request, result so far and retry counts.
struct HttpChatClient::Call {
  WireRequest wire;
  ChatResult r;
  int timeout_ms = 0, transient_retries = 0, bad_retries = 0;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::function<void(ChatResult)> done;  // chat_async only
};

std::optional<std::chrono::milliseconds> HttpChatClient::after_response(Call& c,
                                                                        const HttpResponse& resp) const {
  ChatResult& r = c.r;
  ++r.attempts;
  r.http_status = resp.status;
  Next next = Next::done;
  if (resp.transport == HttpResponse::Transport::timeout) {
    r.status = ChatStatus::timeout;
    r.message = resp.error;
    next = Next::retry_transient;
  } else if (resp.transport == HttpResponse::Transport::error) {
    r.status = ChatStatus::transport_error;
    r.message = resp.error;
    next = Next::retry_transient;
  } else if (resp.status >= 200 && resp.status < 300) {
    ParsedReply p = parse(resp.body);
    r.prompt_tokens += p.prompt_tokens;  // tokens of every reply are spent, retried or not
    r.completion_tokens += p.completion_tokens;
    r.status = p.status;
    r.text = std::move(p.text);
    r.model = std::move(p.model);
    r.finish_reason = std::move(p.finish_reason);
    r.message = std::move(p.message);
    if (r.status != ChatStatus::ok) next = Next::retry_bad_reply;
  } else {
    r.status = resp.status == 429 ? ChatStatus::rate_limited : ChatStatus::http_error;
    r.message = "HTTP " + std::to_string(resp.status) + ": " + error_message_from_body(resp.body) +
                http_error_hint(resp.status);
    const bool transient = resp.status == 429 || resp.status == 408 || resp.status >= 500;
    next = transient ? Next::retry_transient : Next::done;
  }
  if (next == Next::retry_transient && c.transient_retries < cfg_.max_retries)
    return retry_delay(c.transient_retries++, resp.retry_after_s, cfg_, uniform01());
  if (next == Next::retry_bad_reply && c.bad_retries < cfg_.max_bad_reply_retries) {
    ++c.bad_retries;
    return std::chrono::milliseconds(0);
  }
  return std::nullopt;
}

void HttpChatClient::finish_call(Call& c) const {
  ChatResult& r = c.r;
  if (!r.ok()) r.text.clear();
  if (cfg_.price_input_per_mtok && cfg_.price_output_per_mtok) {
    r.cost_usd = (static_cast<double>(r.prompt_tokens) * *cfg_.price_input_per_mtok +
                  static_cast<double>(r.completion_tokens) * *cfg_.price_output_per_mtok) /
                 1e6;
  }
  r.latency_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c.t0).count();
}

ChatResult HttpChatClient::chat(const ChatRequest& req) {
  Call c;
  c.wire = build(req, req.model.empty() ? model_ : req.model);
  c.timeout_ms = req.timeout_ms > 0 ? req.timeout_ms : cfg_.timeout_ms;
  for (;;) {
    HttpResponse resp;
    slots_.acquire();
    try {
      resp = http_post(c.wire.url, c.wire.headers, c.wire.body, c.timeout_ms, cfg_.connect_timeout_ms);
    } catch (...) {  // std::bad_alloc only; keep the slot count right
      slots_.release();
      throw;
    }
    slots_.release();
    auto delay = after_response(c, resp);
    if (!delay) break;
    std::this_thread::sleep_for(*delay);
  }
  finish_call(c);
  return c.r;
}

void HttpChatClient::chat_async(const ChatRequest& req, std::function<void(ChatResult)> done) {
  std::call_once(engine_once_, [this] { engine_ = std::make_unique<CurlMulti>(); });
  auto c = std::make_shared<Call>();
  c->wire = build(req, req.model.empty() ? model_ : req.model);
  c->timeout_ms = req.timeout_ms > 0 ? req.timeout_ms : cfg_.timeout_ms;
  c->done = std::move(done);
  send(std::move(c), std::chrono::milliseconds(0));
}

void HttpChatClient::send(std::shared_ptr<Call> c, std::chrono::milliseconds delay) {
  HttpJob job{c->wire.url, c->wire.headers, c->wire.body, c->timeout_ms, cfg_.connect_timeout_ms};
  engine_->post(std::move(job), std::chrono::steady_clock::now() + delay, [this, c](HttpResponse resp) {
    if (auto next = after_response(*c, resp)) {
      send(c, *next);
      return;
    }
    finish_call(*c);
    c->done(std::move(c->r));
  });
}

}  // namespace llm_detail

namespace {

std::string env_or(const std::string& given, const char* var) {
  if (!given.empty()) return given;
  const char* v = std::getenv(var);
  return v != nullptr ? std::string(v) : std::string();
}

/// An API key goes into an HTTP header: a control byte (a pasted newline, a stray CR) would end
/// the header early or be rejected by the server with a confusing status. Refused here instead;
/// the message names the offset and the byte, never the key.
void check_api_key(const std::string& key) {
  for (std::size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7F) {
      char b[8];
      std::snprintf(b, sizeof b, "0x%02X", c);
      throw std::invalid_argument("the API key holds a control byte (" + std::string(b) + " at offset " +
                                  std::to_string(i) + " of " + std::to_string(key.size()) +
                                  "; a pasted newline?): fix the variable that holds it");
    }
  }
}

}  // namespace

std::unique_ptr<LlmClient> make_llm_client(std::string_view spec, const LlmConfig& cfg_in) {
  const auto colon = spec.find(':');
  if (colon == std::string_view::npos) {
    throw std::invalid_argument(
        "LLM spec '" + std::string(spec) +
        "': expected provider:model, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, "
        "replay:RUN_DIR, scripted:FILE");
  }
  const std::string provider(spec.substr(0, colon));
  std::string model(spec.substr(colon + 1));
  if (model.empty()) {
    throw std::invalid_argument("LLM spec '" + std::string(spec) + "': empty model after '" + provider +
                                ":'");
  }
  if (cfg_in.max_concurrency < 1) {
    throw std::invalid_argument("LLM config: max_concurrency must be >= 1, got " +
                                std::to_string(cfg_in.max_concurrency));
  }
  if (cfg_in.max_retries < 0 || cfg_in.max_bad_reply_retries < 0) {
    throw std::invalid_argument("LLM config: max_retries and max_bad_reply_retries must be >= 0");
  }
  if (!cfg_in.base_url.empty() && cfg_in.base_url.rfind("http://", 0) != 0 &&
      cfg_in.base_url.rfind("https://", 0) != 0) {
    throw std::invalid_argument("LLM config: base URL '" + cfg_in.base_url +
                                "' must start with http:// or https://");
  }

  LlmConfig cfg = cfg_in;
  while (!cfg.base_url.empty() && cfg.base_url.back() == '/') cfg.base_url.pop_back();

  if (provider == "openai" || provider == "anthropic") {
    const bool openai = provider == "openai";
    const char* key_var = openai ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
    const bool public_endpoint = cfg.base_url.empty();
    if (public_endpoint) cfg.base_url = openai ? "https://api.openai.com/v1" : "https://api.anthropic.com";
    cfg.api_key = env_or(cfg.api_key, key_var);
    check_api_key(cfg.api_key);
    if (public_endpoint && cfg.api_key.empty()) {
      throw std::invalid_argument(provider + ": no API key for " + cfg.base_url + ": set " + key_var +
                                  " or pass a key (a local server needs a base URL instead)");
    }
    return openai ? llm_detail::make_openai_client(std::move(model), std::move(cfg))
                  : llm_detail::make_anthropic_client(std::move(model), std::move(cfg));
  }
  if (provider == "replay") {
    std::error_code ec;
    if (!std::filesystem::is_directory(model, ec)) {
      throw std::invalid_argument("replay: run directory '" + model + "' does not exist");
    }
    if (!std::filesystem::is_directory(std::filesystem::path(model) / "attempts", ec)) {
      throw std::invalid_argument("replay: '" + model + "' has no attempts/ directory (not a run directory)");
    }
    return llm_detail::make_replay_client(std::move(model));
  }
  if (provider == "scripted") return llm_detail::make_scripted_client(std::move(model));
  throw std::invalid_argument("LLM spec '" + std::string(spec) + "': unknown provider '" + provider +
                              "' (known: openai, anthropic, replay, scripted)");
}

}  // namespace kforge
