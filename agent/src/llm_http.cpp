// agent/src/llm_http.cpp — one HTTP POST through a libcurl easy handle.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string_view>

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

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
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
  const std::string name = lower(line.substr(0, colon));
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
  const std::string host = lower(rest.substr(0, end));
  return host == "localhost" || host.rfind("127.", 0) == 0;
}

}  // namespace

HttpResponse http_post(const std::string& url, const std::vector<std::string>& headers,
                       const std::string& body, int timeout_ms, int connect_timeout_ms) {
  global_init();
  HttpResponse out;
  CURL* h = curl_easy_init();
  if (h == nullptr) {
    out.error = "curl_easy_init failed";
    return out;
  }
  curl_slist* hl = nullptr;
  for (const auto& line : headers) hl = curl_slist_append(hl, line.c_str());
  hl = curl_slist_append(hl, "Content-Type: application/json");
  hl = curl_slist_append(hl, "Expect:");  // no 100-continue round trip for large prompts

  Sink sink;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: the string form; the bitmask form is deprecated
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max(1, timeout_ms)));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::max(1, connect_timeout_ms)));
  curl_easy_setopt(h, CURLOPT_USERAGENT, "kforge/0.1");
  if (is_loopback_url(url)) curl_easy_setopt(h, CURLOPT_PROXY, "");

  const CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(h);
  curl_slist_free_all(hl);

  out.status = static_cast<int>(status);
  out.retry_after_s = sink.retry_after_s;
  out.body = std::move(sink.body);
  if (rc == CURLE_OK) {
    out.transport = HttpResponse::Transport::ok;
  } else if (rc == CURLE_OPERATION_TIMEDOUT) {
    out.transport = HttpResponse::Transport::timeout;
    out.error = "request timed out after " + std::to_string(timeout_ms) + " ms";
  } else {
    out.transport = HttpResponse::Transport::error;
    out.error = sink.too_big
                    ? "reply larger than 64 MiB"
                    : std::string(curl_easy_strerror(rc)) + (errbuf[0] ? std::string(": ") + errbuf : "");
  }
  return out;
}

}  // namespace kforge::llm_detail
