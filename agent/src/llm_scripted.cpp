// agent/src/llm_scripted.cpp — the scripted provider: an offline model answering from a script.
//
// `--llm scripted:FILE` serves replies from a JSON script, in process, with no network: a
// newcomer sees the agent loop turn (compile error, mismatch, pass) without an endpoint, and
// tests drive `kforge run` without a server. The script has the format of the test server
// tests/tools/kforge-scripted-llm.cpp, without its faults:
//   {"comment": "...", "default": {"content": "..."},
//    "replies": [{"task": "activation/gelu_tanh", "turn": 2, "sample": 0, "content": "...",
//                 "content_file": "gelu/turn2.md", "times": 1,
//                 "prompt_tokens": 10, "completion_tokens": 5, "comment": "..."}]}
// Replies are tried in order; one matches when each of task, turn, sample it names equals the
// request's and it has uses left ("times": N serves it N times; absent: unlimited). No match:
// "default" when given, else a transport_error naming the request (an llm_error attempt).
// content_file is relative to the script's directory. Every reply is labelled as the server's
// are: its text starts with "[scripted reply]" and its model is "kforge-scripted". Token counts:
// whitespace-separated words of the request's messages / of the reply, unless the entry names them.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "llm_internal.hpp"

namespace kforge::llm_detail {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kLabel = "[scripted reply]\n";
constexpr const char* kModel = "kforge-scripted";

struct Entry {
  std::optional<std::string> task;
  std::optional<int> turn, sample;
  std::string content;
  int remaining = -1;  // -1: unlimited
  std::optional<std::int64_t> prompt_tokens, completion_tokens;
};

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::invalid_argument("scripted: " + where + ": " + what);
}

std::string slurp(const fs::path& p, const std::string& where) {
  std::ifstream in(p, std::ios::binary);
  if (!in) bad(where, "cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<std::int64_t> int_of(const json& j, const char* k, const std::string& where) {
  auto it = j.find(k);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) bad(where + "." + k, "must be an integer");
  return it->get<std::int64_t>();
}

/// One script entry; `matchers` is false for "default" (it names no task, turn or sample).
Entry parse_entry(const json& j, const std::string& where, const fs::path& dir, bool matchers) {
  if (!j.is_object()) bad(where, "must be an object");
  static const std::set<std::string> known = {"task",         "turn",  "sample",        "content",
                                              "content_file", "times", "prompt_tokens", "completion_tokens",
                                              "comment"};
  for (const auto& [k, v] : j.items()) {
    if (k == "fault" || k == "retry_after" || k == "delay_ms")
      bad(where + "." + k, "faults are served only by the test server kforge-scripted-llm");
    if (!known.count(k)) bad(where + "." + k, "unknown field");
    if (!matchers && (k == "task" || k == "turn" || k == "sample"))
      bad(where + "." + k, "not allowed in default");
  }
  Entry e;
  if (auto it = j.find("task"); it != j.end()) {
    if (!it->is_string()) bad(where + ".task", "must be a string");
    e.task = it->get<std::string>();
  }
  if (auto v = int_of(j, "turn", where)) e.turn = static_cast<int>(*v);
  if (auto v = int_of(j, "sample", where)) e.sample = static_cast<int>(*v);
  if (auto it = j.find("content"); it != j.end()) {
    if (!it->is_string()) bad(where + ".content", "must be a string");
    e.content = it->get<std::string>();
  }
  if (auto it = j.find("content_file"); it != j.end()) {
    if (!it->is_string()) bad(where + ".content_file", "must be a string");
    e.content = slurp(dir / it->get<std::string>(), where + ".content_file");
  }
  if (auto v = int_of(j, "times", where)) {
    if (*v < 1) bad(where + ".times", "must be >= 1");
    e.remaining = static_cast<int>(*v);
  }
  e.prompt_tokens = int_of(j, "prompt_tokens", where);
  e.completion_tokens = int_of(j, "completion_tokens", where);
  return e;
}

std::int64_t words(const std::string& s) {
  std::istringstream in(s);
  std::int64_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

class ScriptedClient final : public LlmClient {
 public:
  explicit ScriptedClient(std::string file) : file_(std::move(file)) {
    const json j = json::parse(slurp(file_, file_), nullptr, false);
    if (j.is_discarded() || !j.is_object()) bad(file_, "not a JSON object");
    for (const auto& [k, v] : j.items())
      if (k != "default" && k != "replies" && k != "comment") bad(file_ + "." + k, "unknown field");
    const fs::path dir = fs::path(file_).parent_path();
    if (auto it = j.find("default"); it != j.end())
      fallback_ = parse_entry(*it, file_ + ".default", dir, false);
    if (auto it = j.find("replies"); it != j.end()) {
      if (!it->is_array()) bad(file_ + ".replies", "must be an array");
      for (std::size_t i = 0; i < it->size(); ++i)
        replies_.push_back(parse_entry((*it)[i], file_ + ".replies[" + std::to_string(i) + "]", dir, true));
    }
    if (!fallback_ && replies_.empty()) bad(file_, "has neither replies nor a default");
  }
  std::string_view provider() const override { return "scripted"; }
  const std::string& model() const override { return file_; }

  ChatResult chat(const ChatRequest& req) override {
    const auto t0 = std::chrono::steady_clock::now();
    ChatResult r;
    r.attempts = 1;
    r.model = kModel;
    std::optional<Entry> hit = take(req);
    if (!hit) {
      r.status = ChatStatus::transport_error;
      r.message = "scripted: " + file_ + " has no reply for task '" + req.task + "' sample " +
                  std::to_string(req.sample) + " turn " + std::to_string(req.turn) + " and no default";
    } else {
      r.status = ChatStatus::ok;
      r.text = kLabel + hit->content;
      r.finish_reason = "stop";
      std::int64_t prompt_words = 0;
      for (const auto& m : req.messages) prompt_words += words(m.content);
      r.prompt_tokens = hit->prompt_tokens.value_or(prompt_words);
      r.completion_tokens = hit->completion_tokens.value_or(words(r.text));
    }
    r.latency_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

 private:
  /// The first entry matching req with uses left (its use counted), else the default.
  std::optional<Entry> take(const ChatRequest& req) {
    std::lock_guard lk(mu_);
    for (Entry& e : replies_) {
      if (e.task && *e.task != req.task) continue;
      if (e.turn && *e.turn != req.turn) continue;
      if (e.sample && *e.sample != req.sample) continue;
      if (e.remaining == 0) continue;
      if (e.remaining > 0) --e.remaining;
      return e;
    }
    return fallback_;
  }

  std::string file_;
  std::mutex mu_;  // guards replies_' use counts
  std::vector<Entry> replies_;
  std::optional<Entry> fallback_;
};

}  // namespace

std::unique_ptr<LlmClient> make_scripted_client(std::string file) {
  return std::make_unique<ScriptedClient>(std::move(file));
}

}  // namespace kforge::llm_detail
