// agent/src/llm_http.cpp — one HTTP POST through a libcurl easy handle.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include "kforge/common/ascii.hpp"
#include "llm_internal.hpp"

namespace kforge::llm_detail {
namespace {

constexpr std::size_t kMaxBody = 64u << 20;  // a reply larger than this is an error

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Sink {
  std::string body;
  bool too_big = false;
  std::optional<double> retry_after_s;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const std::size_t len = size * n;
  if (s->body.size() + len > kMaxBody) {
    s->too_big = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  s->body.append(data, len);
  return len;
}

std::optional<double> parse_seconds(std::string_view v) {
  std::string t(v);
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return std::nullopt;  // an HTTP date: fall back to back-off
  while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') ++end;
  if (*end != '\0' || d < 0) return std::nullopt;
  return d;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const std::size_t len = size * n;
  std::string_view line(data, len);
  if (line.substr(0, 5) == "HTTP/") {
    s->retry_after_s.reset();  // a new response (after 100-continue): forget earlier headers
    return len;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return len;
  const std::string name = ascii_lower(line.substr(0, colon));
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  if (name == "retry-after-ms") {
    if (auto ms = parse_seconds(value)) s->retry_after_s = *ms / 1000.0;
  } else if (name == "retry-after" && !s->retry_after_s) {
    s->retry_after_s = parse_seconds(value);
  }
  return len;
}

bool is_loopback_url(std::string_view url) {
  auto p = url.find("://");
  if (p == std::string_view::npos) return false;
  std::string_view rest = url.substr(p + 3);
  if (rest.substr(0, 5) == "[::1]") return true;
  const auto end = rest.find_first_of(":/");
  const std::string host = ascii_lower(rest.substr(0, end));
  return host == "localhost" || host.rfind("127.", 0) == 0;
}

}  // namespace

namespace {

/// One transfer's easy handle and the buffers it writes into.
struct Transfer {
  HttpJob job;
  Sink sink;
  curl_slist* headers = nullptr;
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* h = nullptr;
  std::chrono::steady_clock::time_point start_at;
  std::function<void(HttpResponse)> done;
  ~Transfer() {
    if (h) curl_easy_cleanup(h);
    curl_slist_free_all(headers);
  }
};

/// Configures t.h for t.job (the options of the file comment). False when no handle could be made.
bool setup_easy(Transfer& t) {
  t.h = curl_easy_init();
  if (t.h == nullptr) return false;
  for (const auto& line : t.job.headers) t.headers = curl_slist_append(t.headers, line.c_str());
  t.headers = curl_slist_append(t.headers, "Content-Type: application/json");
  t.headers = curl_slist_append(t.headers, "Expect:");  // no 100-continue round trip for large prompts
  CURL* h = t.h;
  curl_easy_setopt(h, CURLOPT_URL, t.job.url.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, t.job.body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.job.body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, t.headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t.sink);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t.sink);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t.errbuf);
  curl_easy_setopt(h, CURLOPT_PRIVATE, &t);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: the string form; the bitmask form is deprecated
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max(1, t.job.timeout_ms)));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::max(1, t.job.connect_timeout_ms)));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "kforge/0.1");
  if (is_loopback_url(t.job.url)) curl_easy_setopt(h, CURLOPT_PROXY, "");
  return true;
}

/// The response of a finished transfer.
HttpResponse finish_easy(Transfer& t, CURLcode rc) {
  HttpResponse out;
  long status = 0;
  curl_easy_getinfo(t.h, CURLINFO_RESPONSE_CODE, &status);
  out.status = static_cast<int>(status);
  out.retry_after_s = t.sink.retry_after_s;
  out.body = std::move(t.sink.body);
  if (rc == CURLE_OK) {
    out.transport = HttpResponse::Transport::ok;
  } else if (rc == CURLE_OPERATION_TIMEDOUT) {
    out.transport = HttpResponse::Transport::timeout;
    out.error = "request timed out after " + std::to_string(t.job.timeout_ms) + " ms";
  } else {
    out.transport = HttpResponse::Transport::error;
    out.error = t.sink.too_big
                    ? "reply larger than 64 MiB"
                    : std::string(curl_easy_strerror(rc)) + (t.errbuf[0] ? std::string(": ") + t.errbuf : "");
  }
  return out;
}

}  // namespace

HttpResponse http_post(const std::string& url, const std::vector<std::string>& headers,
                       const std::string& body, int timeout_ms, int connect_timeout_ms) {
  global_init();
  Transfer t;
  t.job = HttpJob{url, headers, body, timeout_ms, connect_timeout_ms};
  if (!setup_easy(t)) {
    HttpResponse out;
    out.error = "curl_easy_init failed";
    return out;
  }
  return finish_easy(t, curl_easy_perform(t.h));
}

struct CurlMulti::State {
  std::mutex mu;
  std::vector<std::unique_ptr<Transfer>> incoming;  // posted, not yet seen by the loop
  bool quit = false;
};

CurlMulti::CurlMulti() : st_(std::make_unique<State>()) {
  global_init();
  multi_ = curl_multi_init();  // CURLM*
  thread_ = std::thread([this] { loop(); });
}

CurlMulti::~CurlMulti() {
  {
    std::lock_guard lk(st_->mu);
    st_->quit = true;
  }
  curl_multi_wakeup(static_cast<CURLM*>(multi_));
  thread_.join();
  curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

void CurlMulti::post(HttpJob job, std::chrono::steady_clock::time_point start_at,
                     std::function<void(HttpResponse)> done) {
  auto t = std::make_unique<Transfer>();
  t->job = std::move(job);
  t->start_at = start_at;
  t->done = std::move(done);
  {
    std::lock_guard lk(st_->mu);
    if (st_->quit) return;  // shutting down: abandoned
    st_->incoming.push_back(std::move(t));
  }
  curl_multi_wakeup(static_cast<CURLM*>(multi_));
}

void CurlMulti::loop() {
  using clock = std::chrono::steady_clock;
  std::vector<std::unique_ptr<Transfer>> waiting;     // back-off before their start
  std::map<CURL*, std::unique_ptr<Transfer>> active;  // added to the multi handle
  for (;;) {
    {
      std::lock_guard lk(st_->mu);
      if (st_->quit) break;
      for (auto& t : st_->incoming) waiting.push_back(std::move(t));
      st_->incoming.clear();
    }
    const auto now = clock::now();
    auto next_start = now + std::chrono::seconds(1);
    for (auto it = waiting.begin(); it != waiting.end();) {
      if ((*it)->start_at > now) {
        next_start = std::min(next_start, (*it)->start_at);
        ++it;
        continue;
      }
      std::unique_ptr<Transfer> t = std::move(*it);
      it = waiting.erase(it);
      if (!setup_easy(*t)) {
        HttpResponse r;
        r.error = "curl_easy_init failed";
        t->done(std::move(r));
        continue;
      }
      curl_multi_add_handle(static_cast<CURLM*>(multi_), t->h);
      active.emplace(t->h, std::move(t));
    }
    int running = 0;
    curl_multi_perform(static_cast<CURLM*>(multi_), &running);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(static_cast<CURLM*>(multi_), &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      auto node = active.extract(m->easy_handle);
      curl_multi_remove_handle(static_cast<CURLM*>(multi_), m->easy_handle);
      HttpResponse r = finish_easy(*node.mapped(), m->data.result);
      node.mapped()->done(std::move(r));
    }
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_start - clock::now()).count();
    curl_multi_poll(static_cast<CURLM*>(multi_), nullptr, 0,
                    static_cast<int>(std::clamp<long long>(wait, 0, 1000)), nullptr);
  }
  for (auto& [h, t] : active) curl_multi_remove_handle(static_cast<CURLM*>(multi_), h);  // abandoned
}

}  // namespace kforge::llm_detail
