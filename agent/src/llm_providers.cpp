// agent/src/llm_providers.cpp — the openai and anthropic wire formats (JSON lives only here).
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "llm_internal.hpp"

namespace kforge::llm_detail {
namespace {

using nlohmann::json;

bool blank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

std::int64_t int_field(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it != obj.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

std::string str_field(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

ParsedReply malformed(std::string why) {
  ParsedReply p;
  p.status = ChatStatus::malformed_reply;
  p.message = std::move(why);
  return p;
}

void finish(ParsedReply& p) {
  if (blank(p.text)) {
    p.status = ChatStatus::empty_reply;
    p.message = "reply has no text content" +
                (p.finish_reason.empty() ? std::string() : " (finish reason: " + p.finish_reason + ")");
  } else {
    p.status = ChatStatus::ok;
  }
}

// ------------------------------------------------------------------------------------- openai

class OpenAiClient final : public HttpChatClient {
 public:
  using HttpChatClient::HttpChatClient;
  std::string_view provider() const override { return "openai"; }

 protected:
  /// kforge posts to <base>/chat/completions; vLLM, SGLang and most local servers serve under
  /// /v1, so a 404 from a base URL not ending in /v1 most likely lacks it.
  std::string http_error_hint(int status) const override {
    const std::string& b = cfg_.base_url;
    if (status != 404 || (b.size() >= 3 && b.compare(b.size() - 3, 3, "/v1") == 0)) return {};
    return " (no " + b +
           "/chat/completions? OpenAI-compatible servers such as vLLM and SGLang serve under "
           "/v1: try --base-url " +
           b + "/v1)";
  }

  WireRequest build(const ChatRequest& req, const std::string& model) const override {
    json msgs = json::array();
    for (const auto& m : req.messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
    json body = {{"model", model}, {"messages", std::move(msgs)}};
    if (req.reasoning_effort) {
      body["reasoning_effort"] = *req.reasoning_effort;
      body["max_completion_tokens"] = req.max_tokens;
    } else {
      body["temperature"] = req.temperature;
      body["top_p"] = req.top_p;
      body["max_tokens"] = req.max_tokens;
    }
    if (req.seed) body["seed"] = *req.seed;

    WireRequest w;
    w.url = cfg_.base_url + "/chat/completions";
    if (!cfg_.api_key.empty()) w.headers.push_back("Authorization: Bearer " + cfg_.api_key);
    add_task_headers(req, w.headers);
    w.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    return w;
  }

  ParsedReply parse(const std::string& raw) const override {
    json j = json::parse(raw, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return malformed("reply is not a JSON object");
    if (j.contains("error")) return malformed("reply carries an error: " + error_message_from_body(raw));
    auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) {
      return malformed("reply has no choices[0]");
    }
    const json& c0 = (*choices)[0];
    auto msg = c0.find("message");
    if (msg == c0.end() || !msg->is_object()) return malformed("reply has no choices[0].message");

    ParsedReply p;
    p.model = str_field(j, "model");
    p.finish_reason = str_field(c0, "finish_reason");
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
      p.prompt_tokens = int_field(*u, "prompt_tokens");
      p.completion_tokens = int_field(*u, "completion_tokens");
    }
    auto content = msg->find("content");
    if (content != msg->end() && content->is_string()) {
      p.text = content->get<std::string>();
    } else if (content != msg->end() && content->is_array()) {  // content parts
      for (const auto& part : *content) {
        if (part.is_object()) p.text += str_field(part, "text");
      }
    } else if (content != msg->end() && !content->is_null()) {
      return malformed("choices[0].message.content is neither a string nor a list of parts");
    }
    finish(p);
    return p;
  }
};

// ---------------------------------------------------------------------------------- anthropic

int thinking_budget(const std::string& effort) {
  if (effort == "low" || effort == "minimal") return 2048;
  if (effort == "medium") return 8192;
  if (effort == "high") return 24576;
  const long n = std::strtol(effort.c_str(), nullptr, 10);
  return n >= 1024 ? static_cast<int>(n) : 8192;  // the API's minimum budget is 1024
}

class AnthropicClient final : public HttpChatClient {
 public:
  using HttpChatClient::HttpChatClient;
  std::string_view provider() const override { return "anthropic"; }

 protected:
  WireRequest build(const ChatRequest& req, const std::string& model) const override {
    std::string system;
    json msgs = json::array();
    for (const auto& m : req.messages) {
      if (m.role == "system") {
        system += (system.empty() ? "" : "\n\n") + m.content;
      } else {
        msgs.push_back({{"role", m.role}, {"content", m.content}});
      }
    }
    json body = {{"model", model}, {"messages", std::move(msgs)}, {"max_tokens", req.max_tokens}};
    if (!system.empty()) body["system"] = system;
    if (req.reasoning_effort) {
      const int budget = thinking_budget(*req.reasoning_effort);
      body["thinking"] = {{"type", "enabled"}, {"budget_tokens", budget}};
      body["max_tokens"] = req.max_tokens + budget;  // max_tokens must exceed the budget
      // Extended thinking requires the default temperature: send neither temperature nor top_p.
    } else {
      body["temperature"] = req.temperature;
      if (req.top_p < 1.0) body["top_p"] = req.top_p;  // newer models reject both by default
    }

    WireRequest w;
    w.url = cfg_.base_url + "/v1/messages";
    if (!cfg_.api_key.empty()) w.headers.push_back("x-api-key: " + cfg_.api_key);
    w.headers.push_back("anthropic-version: " + cfg_.anthropic_version);
    add_task_headers(req, w.headers);
    w.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    return w;
  }

  ParsedReply parse(const std::string& raw) const override {
    json j = json::parse(raw, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return malformed("reply is not a JSON object");
    if (str_field(j, "type") == "error" || j.contains("error")) {
      return malformed("reply carries an error: " + error_message_from_body(raw));
    }
    auto content = j.find("content");
    if (content == j.end() || !content->is_array()) return malformed("reply has no content list");
    ParsedReply p;
    p.model = str_field(j, "model");
    p.finish_reason = str_field(j, "stop_reason");
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
      p.prompt_tokens = int_field(*u, "input_tokens");
      p.completion_tokens = int_field(*u, "output_tokens");
    }
    for (const auto& block : *content) {  // thinking blocks are skipped
      if (block.is_object() && str_field(block, "type") == "text") p.text += str_field(block, "text");
    }
    finish(p);
    return p;
  }
};

}  // namespace

std::unique_ptr<LlmClient> make_openai_client(std::string model, LlmConfig cfg) {
  return std::make_unique<OpenAiClient>(std::move(model), std::move(cfg));
}

std::unique_ptr<LlmClient> make_anthropic_client(std::string model, LlmConfig cfg) {
  return std::make_unique<AnthropicClient>(std::move(model), std::move(cfg));
}

}  // namespace kforge::llm_detail
