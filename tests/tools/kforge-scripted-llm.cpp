// kforge-scripted-llm — a scripted model server for tests and offline demos.
//
// A real HTTP/1.1 server on 127.0.0.1 that speaks the OpenAI chat-completions API
// (POST /v1/chat/completions and /chat/completions) and the Anthropic messages API
// (POST /v1/messages), answering from a script instead of a model. Every reply it serves is
// labelled: the reply's model is "kforge-scripted" and its text starts with the line
// "[scripted reply]". Nothing here pretends to be a real model.
//
//   kforge-scripted-llm [--port N] [--script FILE] [--log FILE] [--v1-only]
//
// --port 0 (the default) picks an ephemeral port. The first line on stdout is
// "listening on 127.0.0.1:<port>" (flushed); nothing else is written to stdout.
// --v1-only serves the chat APIs under /v1 only, as vLLM and SGLang do: POST /chat/completions
// gets HTTP 404 "no route".
// SIGTERM or SIGINT: stop accepting, cut open connections, flush the log, exit 0.
//
// Script (JSON):
//   {"default": {"content": "..."},
//    "replies": [{"task": "activation/gelu", "turn": 2, "sample": 0, "content": "...",
//                 "content_file": "gelu.md", "fault": "429", "retry_after": 1,
//                 "delay_ms": 0, "times": 1, "prompt_tokens": 10, "completion_tokens": 5}]}
// A request's task/sample/turn come from the X-Kforge-Task/-Sample/-Turn headers, else from
// "task: NAME", "sample: N", "turn: N" markers in the last user message. Replies are tried in
// order; one matches when each of task, turn, sample it names equals the request's and it has
// uses left. "times": N serves the entry N times, then it falls through to the next matching
// entry (absent: unlimited). No match: "default" when given, else HTTP 404 naming the request.
// Faults: "429" (with Retry-After when retry_after is set), "500", "slow" (waits delay_ms,
// 2000 when unset, then replies normally), "malformed" (200 with a body that is not JSON),
// "empty" (200 with empty content), "disconnect" (closes the connection without a reply).
// delay_ms delays any reply. content_file is relative to the script's directory.
// Token usage: whitespace-separated words of all request messages (and system) / of the served
// text, unless the entry gives prompt_tokens / completion_tokens.
//
// Requests are checked like a strict server would: a body that is not JSON, no model, no
// messages, (anthropic) no max_tokens, a "system" role inside messages, or missing x-api-key /
// anthropic-version headers get HTTP 400 with an error body.
//
// GET /stats returns {"requests", "in_flight", "max_in_flight", "faults": {...}} (chat requests
// only). With --log, every chat request is logged as one JSON line (task, sample, turn, path,
// fault served, status, and the request fields a test may check).
#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;

namespace {

constexpr const char* kLabel = "[scripted reply]\n";
constexpr const char* kModel = "kforge-scripted";

struct Entry {
  std::optional<std::string> task;
  std::optional<int> turn, sample;
  std::string content;
  std::string fault;  // "" = none
  std::optional<double> retry_after;
  int delay_ms = 0;
  int remaining = -1;  // -1 = unlimited
  std::optional<long> prompt_tokens, completion_tokens;
};

struct Script {
  std::optional<Entry> fallback;
  std::vector<Entry> replies;
};

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "kforge-scripted-llm: " << msg << "\n";
  std::exit(2);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) die("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Entry parse_entry(const json& j, const std::string& where, const std::filesystem::path& dir, bool matchers) {
  if (!j.is_object()) die(where + ": must be an object");
  static const std::set<std::string> known = {"task",         "turn",          "sample",           "content",
                                              "content_file", "fault",         "retry_after",      "delay_ms",
                                              "times",        "prompt_tokens", "completion_tokens"};
  static const std::set<std::string> faults = {"429", "500", "slow", "malformed", "empty", "disconnect"};
  for (const auto& [k, v] : j.items()) {
    if (!known.count(k)) die(where + "." + k + ": unknown field");
    if (!matchers && (k == "task" || k == "turn" || k == "sample"))
      die(where + "." + k + ": not allowed in default");
  }
  auto get_int = [&](const char* k) -> std::optional<long> {
    auto it = j.find(k);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer()) die(where + "." + k + ": must be an integer");
    return it->get<long>();
  };
  Entry e;
  if (auto it = j.find("task"); it != j.end()) {
    if (!it->is_string()) die(where + ".task: must be a string");
    e.task = it->get<std::string>();
  }
  if (auto v = get_int("turn")) e.turn = static_cast<int>(*v);
  if (auto v = get_int("sample")) e.sample = static_cast<int>(*v);
  if (auto it = j.find("content"); it != j.end()) {
    if (!it->is_string()) die(where + ".content: must be a string");
    e.content = it->get<std::string>();
  }
  if (auto it = j.find("content_file"); it != j.end()) {
    if (!it->is_string()) die(where + ".content_file: must be a string");
    e.content = slurp(dir / it->get<std::string>());
  }
  if (auto it = j.find("fault"); it != j.end() && !it->is_null()) {
    if (it->is_number_integer()) {
      e.fault = std::to_string(it->get<long>());
    } else if (it->is_string()) {
      e.fault = it->get<std::string>();
    } else {
      die(where + ".fault: must be a string");
    }
    if (!faults.count(e.fault)) {
      die(where + ".fault: unknown fault '" + e.fault +
          "' (known: 429, 500, slow, malformed, empty, disconnect)");
    }
  }
  if (auto it = j.find("retry_after"); it != j.end() && !it->is_null()) {
    if (!it->is_number() || it->get<double>() < 0) die(where + ".retry_after: must be a number >= 0");
    e.retry_after = it->get<double>();
  }
  if (auto v = get_int("delay_ms")) e.delay_ms = static_cast<int>(*v);
  if (auto v = get_int("times")) {
    if (*v < 1) die(where + ".times: must be >= 1");
    e.remaining = static_cast<int>(*v);
  }
  e.prompt_tokens = get_int("prompt_tokens");
  e.completion_tokens = get_int("completion_tokens");
  if (e.fault == "slow" && e.delay_ms == 0) e.delay_ms = 2000;
  return e;
}

Script load_script(const std::string& file) {
  Script s;
  const std::string text = slurp(file);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) die("script " + file + ": not a JSON object");
  const auto dir = std::filesystem::path(file).parent_path();
  for (const auto& [k, v] : j.items()) {
    if (k != "default" && k != "replies" && k != "comment")
      die("script " + file + ": unknown field '" + k + "'");
  }
  if (auto it = j.find("default"); it != j.end() && !it->is_null()) {
    s.fallback = parse_entry(*it, "script " + file + ": default", dir, false);
  }
  if (auto it = j.find("replies"); it != j.end()) {
    if (!it->is_array()) die("script " + file + ": replies: must be an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      s.replies.push_back(
          parse_entry((*it)[i], "script " + file + ": replies[" + std::to_string(i) + "]", dir, true));
    }
  }
  return s;
}

long count_words(const std::string& s) {
  long n = 0;
  bool in = false;
  for (char c : s) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

// ------------------------------------------------------------------------------------- server

struct Server {
  Script script;
  std::mutex script_mu;

  std::ofstream log;
  std::mutex log_mu;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();

  std::atomic<bool> stopping{false};
  std::atomic<long> requests{0};
  std::atomic<int> in_flight{0}, max_in_flight{0};
  std::mutex faults_mu;
  std::map<std::string, long> faults;

  std::mutex sess_mu;
  std::condition_variable sess_cv;
  int sessions = 0;
  std::set<int> open_fds;
};

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

Response json_response(const Request& req, http::status st, const json& body) {
  Response res{st, req.version()};
  res.set(http::field::server, "kforge-scripted-llm");
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  res.body() = body.dump();
  res.prepare_payload();
  return res;
}

json error_body(bool anthropic, const std::string& type, const std::string& msg) {
  if (anthropic) return {{"type", "error"}, {"error", {{"type", type}, {"message", msg}}}};
  return {{"error", {{"message", msg}, {"type", type}, {"code", nullptr}}}};
}

void sleep_unless_stopping(Server& srv, int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!srv.stopping && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

struct Handled {
  Response res;
  bool disconnect = false;
};

// Finds the episode coordinates of a request: headers first, then markers in the text.
void coordinates(const Request& req, const json& messages, std::optional<std::string>& task,
                 std::optional<int>& sample, std::optional<int>& turn, std::string& source) {
  auto header = [&](const char* name) -> std::optional<std::string> {
    auto it = req.find(name);
    if (it == req.end()) return std::nullopt;
    return std::string(it->value());
  };
  auto to_int = [](const std::optional<std::string>& s) -> std::optional<int> {
    if (!s) return std::nullopt;
    try {
      return std::stoi(*s);
    } catch (...) {
      return std::nullopt;
    }
  };
  if (auto t = header("X-Kforge-Task")) {
    task = *t;
    sample = to_int(header("X-Kforge-Sample"));
    turn = to_int(header("X-Kforge-Turn"));
    source = "header";
    return;
  }
  std::string last_user;
  if (messages.is_array()) {
    for (const auto& m : messages) {
      if (m.is_object() && m.value("role", "") == "user" && m.contains("content") &&
          m["content"].is_string()) {
        last_user = m["content"].get<std::string>();
      }
    }
  }
  static const std::regex task_re(R"(task:\s*(\S+))"), turn_re(R"(turn:\s*(\d+))"),
      sample_re(R"(sample:\s*(\d+))");
  std::smatch m;
  if (std::regex_search(last_user, m, task_re)) {
    task = m[1].str();
    source = "marker";
    if (std::regex_search(last_user, m, turn_re)) turn = std::stoi(m[1].str());
    if (std::regex_search(last_user, m, sample_re)) sample = std::stoi(m[1].str());
  } else {
    source = "none";
  }
}

Handled handle_chat(Server& srv, const Request& req, bool anthropic, json& log) {
  const std::string path(req.target());
  log["path"] = path;
  log["api"] = anthropic ? "anthropic" : "openai";
  auto bad = [&](http::status st, const std::string& msg) {
    log["status"] = static_cast<int>(st);
    log["error"] = msg;
    return Handled{json_response(req, st, error_body(anthropic, "invalid_request_error", msg))};
  };

  // What a test may want to check about the request.
  std::string auth = "none";
  if (auto it = req.find(http::field::authorization); it != req.end() && it->value().starts_with("Bearer "))
    auth = "bearer";
  if (req.find("x-api-key") != req.end()) auth = "x-api-key";
  log["auth"] = auth;
  if (auto it = req.find("anthropic-version"); it != req.end())
    log["anthropic_version"] = std::string(it->value());

  json body = json::parse(req.body(), nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return bad(http::status::bad_request, "request body is not a JSON object");
  for (const char* k : {"model", "max_tokens", "max_completion_tokens", "temperature", "top_p", "seed",
                        "reasoning_effort", "thinking"}) {
    if (body.contains(k)) log[k] = body[k];
  }
  log["system"] = body.contains("system");
  const json messages = body.value("messages", json());
  if (!body.contains("model") || !body["model"].is_string())
    return bad(http::status::bad_request, "model: missing or not a string");
  if (!messages.is_array() || messages.empty())
    return bad(http::status::bad_request, "messages: missing or empty");
  log["n_messages"] = messages.size();
  long prompt_words = 0;
  for (const auto& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return bad(http::status::bad_request, "messages: each message needs string role and content");
    }
    if (anthropic && m["role"] == "system") {
      return bad(http::status::bad_request,
                 "messages: system role is not allowed; use the top-level system field");
    }
    prompt_words += count_words(m["content"].get<std::string>());
  }
  if (anthropic) {
    if (!body.contains("max_tokens") || !body["max_tokens"].is_number_integer()) {
      return bad(http::status::bad_request, "max_tokens: required");
    }
    if (req.find("anthropic-version") == req.end())
      return bad(http::status::bad_request, "anthropic-version header: required");
    if (req.find("x-api-key") == req.end())
      return bad(http::status::unauthorized, "x-api-key header: required");
    if (body.contains("system") && body["system"].is_string())
      prompt_words += count_words(body["system"].get<std::string>());
  }

  std::optional<std::string> task;
  std::optional<int> sample, turn;
  std::string source;
  coordinates(req, messages, task, sample, turn, source);
  log["task"] = task ? json(*task) : json(nullptr);
  log["sample"] = sample ? json(*sample) : json(nullptr);
  log["turn"] = turn ? json(*turn) : json(nullptr);
  log["matched_by"] = source;

  std::optional<Entry> chosen;
  {
    std::lock_guard lk(srv.script_mu);
    for (std::size_t i = 0; i < srv.script.replies.size(); ++i) {
      Entry& e = srv.script.replies[i];
      if (e.remaining == 0) continue;
      if (e.task && (!task || *e.task != *task)) continue;
      if (e.turn && (!turn || *e.turn != *turn)) continue;
      if (e.sample && (!sample || *e.sample != *sample)) continue;
      if (e.remaining > 0) --e.remaining;
      chosen = e;
      log["entry"] = i;
      break;
    }
    if (!chosen && srv.script.fallback) {
      chosen = *srv.script.fallback;
      log["entry"] = "default";
    }
  }
  if (!chosen) {
    std::ostringstream msg;
    msg << "kforge-scripted: no scripted reply for task '" << (task ? *task : "") << "' sample "
        << (sample ? std::to_string(*sample) : "-") << " turn " << (turn ? std::to_string(*turn) : "-");
    log["status"] = 404;
    log["error"] = msg.str();
    return Handled{
        json_response(req, http::status::not_found, error_body(anthropic, "not_found_error", msg.str()))};
  }
  const Entry& e = *chosen;
  log["fault"] = e.fault.empty() ? json(nullptr) : json(e.fault);
  {
    std::lock_guard lk(srv.faults_mu);
    ++srv.faults[e.fault.empty() ? "none" : e.fault];
  }
  if (e.delay_ms > 0) sleep_unless_stopping(srv, e.delay_ms);

  if (e.fault == "disconnect") {
    log["status"] = 0;
    return Handled{Response{}, true};
  }
  if (e.fault == "429" || e.fault == "500") {
    const bool rl = e.fault == "429";
    const auto st = rl ? http::status::too_many_requests : http::status::internal_server_error;
    Response res = json_response(req, st,
                                 error_body(anthropic, rl ? "rate_limit_error" : "api_error",
                                            rl ? "kforge-scripted: rate limited (scripted fault)"
                                               : "kforge-scripted: internal error (scripted fault)"));
    if (e.retry_after) {
      std::ostringstream ra;
      ra << *e.retry_after;
      res.set(http::field::retry_after, ra.str());
    }
    log["status"] = static_cast<int>(st);
    return Handled{std::move(res)};
  }
  if (e.fault == "malformed") {
    Response res{http::status::ok, req.version()};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() =
        R"({"id": "kforge-scripted", "choices": [{"message": {"role": "assistant", "content": "[scripted)";
    res.prepare_payload();
    log["status"] = 200;
    return Handled{std::move(res)};
  }

  const std::string text = e.fault == "empty" ? std::string() : std::string(kLabel) + e.content;
  const long pt = e.prompt_tokens.value_or(prompt_words);
  const long ct = e.completion_tokens.value_or(count_words(text));
  const long n = srv.requests.load();
  json out;
  if (anthropic) {
    out = {{"id", "msg_kforge_scripted_" + std::to_string(n)},
           {"type", "message"},
           {"role", "assistant"},
           {"model", kModel},
           {"content", json::array({{{"type", "text"}, {"text", text}}})},
           {"stop_reason", "end_turn"},
           {"stop_sequence", nullptr},
           {"usage", {{"input_tokens", pt}, {"output_tokens", ct}}}};
  } else {
    out = {{"id", "chatcmpl-kforge-scripted-" + std::to_string(n)},
           {"object", "chat.completion"},
           {"created", static_cast<long>(std::time(nullptr))},
           {"model", kModel},
           {"choices", json::array({{{"index", 0},
                                     {"message", {{"role", "assistant"}, {"content", text}}},
                                     {"finish_reason", "stop"}}})},
           {"usage", {{"prompt_tokens", pt}, {"completion_tokens", ct}, {"total_tokens", pt + ct}}}};
  }
  log["status"] = 200;
  return Handled{json_response(req, http::status::ok, out)};
}

json stats(Server& srv) {
  json f = json::object();
  {
    std::lock_guard lk(srv.faults_mu);
    for (const auto& [k, v] : srv.faults) f[k] = v;
  }
  return {{"requests", srv.requests.load()},
          {"in_flight", srv.in_flight.load()},
          {"max_in_flight", srv.max_in_flight.load()},
          {"faults", f}};
}

void write_log(Server& srv, json& line) {
  if (!srv.log.is_open()) return;
  line["t_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - srv.t0).count();
  std::lock_guard lk(srv.log_mu);
  srv.log << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  srv.log.flush();
}

bool g_v1_only = false;  // set once in main, before any session starts

void session(Server& srv, tcp::socket sock) {
  const int fd = sock.native_handle();
  beast::flat_buffer buf;
  beast::error_code ec;
  while (!srv.stopping) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    http::read(sock, buf, parser, ec);
    if (ec) break;
    const Request& req = parser.get();
    const std::string target(req.target());
    const bool chat = req.method() == http::verb::post &&
                      (target == "/v1/chat/completions" || (target == "/chat/completions" && !g_v1_only) ||
                       target == "/v1/messages");
    if (chat) {
      const long seq = ++srv.requests;
      const int now = ++srv.in_flight;
      int prev = srv.max_in_flight.load();
      while (now > prev && !srv.max_in_flight.compare_exchange_weak(prev, now)) {
      }
      json log = {{"seq", seq}};
      Handled h = handle_chat(srv, req, target == "/v1/messages", log);
      write_log(srv, log);  // before replying: a client that got the reply finds the log line
      // Out of flight before the reply leaves: a client that got it may send its next request
      // at once, and must not be counted as overlapping this one.
      --srv.in_flight;
      if (!h.disconnect) http::write(sock, h.res, ec);
      if (h.disconnect || ec || !req.keep_alive()) break;
      continue;
    }
    Response res;
    if (req.method() == http::verb::get && target == "/stats") {
      res = json_response(req, http::status::ok, stats(srv));
    } else {
      res = json_response(req, http::status::not_found,
                          error_body(false, "not_found_error", "kforge-scripted: no route " + target));
    }
    http::write(sock, res, ec);
    if (ec || !req.keep_alive()) break;
  }
  {
    std::lock_guard lk(srv.sess_mu);
    srv.open_fds.erase(fd);
  }
  sock.shutdown(tcp::socket::shutdown_both, ec);
  sock.close(ec);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string script_file, log_file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + ": needs a value");
      return argv[++i];
    };
    if (a == "--port") {
      try {
        port = std::stoi(value());
      } catch (...) {
        die("--port: not a number");
      }
      if (port < 0 || port > 65535) die("--port: out of range");
    } else if (a == "--script") {
      script_file = value();
    } else if (a == "--log") {
      log_file = value();
    } else if (a == "--v1-only") {
      g_v1_only = true;
    } else if (a == "--help" || a == "-h") {
      std::cout << "usage: kforge-scripted-llm [--port N] [--script FILE] [--log FILE] [--v1-only]\n";
      return 0;
    } else {
      die("unknown argument '" + a + "' (see --help)");
    }
  }

  Server srv;
  if (!script_file.empty()) srv.script = load_script(script_file);
  if (!log_file.empty()) {
    srv.log.open(log_file, std::ios::app);
    if (!srv.log) die("cannot open log " + log_file);
  }

  // Signals are taken by sigwait in main only: block them before any thread starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  asio::io_context io;
  tcp::acceptor acceptor(io);
  beast::error_code ec;
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) die("cannot listen on 127.0.0.1:" + std::to_string(port) + ": " + ec.message());
  std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
  std::fflush(stdout);

  std::thread accept_thread([&] {
    for (;;) {
      tcp::socket sock(io);
      beast::error_code aec;
      acceptor.accept(sock, aec);
      if (srv.stopping) break;
      if (aec) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // EMFILE and the like
        continue;
      }
      sock.set_option(tcp::no_delay(true), aec);
      {
        std::lock_guard lk(srv.sess_mu);
        ++srv.sessions;
        srv.open_fds.insert(sock.native_handle());
      }
      std::thread([&srv, s = std::move(sock)]() mutable {
        session(srv, std::move(s));
        std::lock_guard lk(srv.sess_mu);
        --srv.sessions;
        srv.sess_cv.notify_all();
      }).detach();
    }
  });

  int sig = 0;
  sigwait(&sigs, &sig);
  srv.stopping = true;
  ::shutdown(acceptor.native_handle(), SHUT_RDWR);  // wakes the blocked accept()
  accept_thread.join();
  {
    std::unique_lock lk(srv.sess_mu);
    for (int fd : srv.open_fds) ::shutdown(fd, SHUT_RDWR);
    srv.sess_cv.wait_for(lk, std::chrono::seconds(5), [&] { return srv.sessions == 0; });
  }
  acceptor.close(ec);
  if (srv.log.is_open()) srv.log.flush();
  return 0;
}
