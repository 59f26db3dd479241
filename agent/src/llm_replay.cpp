// agent/src/llm_replay.cpp — the replay provider: recorded responses from a run directory.
#include "llm_internal.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kforge::llm_detail {
namespace {

namespace fs = std::filesystem;

class ReplayClient final : public LlmClient {
 public:
  explicit ReplayClient(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  std::string_view provider() const override { return "replay"; }
  const std::string& model() const override { return run_dir_; }

  ChatResult chat(const ChatRequest& req) override {
    const auto t0 = std::chrono::steady_clock::now();
    ChatResult r;
    r.attempts = 1;
    r.model = "replay";
    const fs::path task(req.task);
    bool safe = !req.task.empty() && task.is_relative() && req.sample >= 0 && req.turn >= 0;
    for (const auto& part : task) safe = safe && part != ".." && part != ".";
    if (!safe) {
      r.status = ChatStatus::transport_error;
      r.message = "replay: request has no valid task/sample/turn (task '" + req.task + "', sample " +
                  std::to_string(req.sample) + ", turn " + std::to_string(req.turn) + ")";
      return r;
    }
    const fs::path file = fs::path(run_dir_) / "attempts" / task / std::to_string(req.sample) /
                          std::to_string(req.turn) / "response.txt";
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      r.status = ChatStatus::transport_error;
      r.message = "replay: no recorded response at " + file.string();
    } else {
      std::ostringstream ss;
      ss << in.rdbuf();
      r.text = ss.str();
      if (r.text.find_first_not_of(" \t\r\n") == std::string::npos) {
        r.status = ChatStatus::empty_reply;
        r.message = "replay: recorded response is empty: " + file.string();
        r.text.clear();
      } else {
        r.status = ChatStatus::ok;
      }
    }
    r.latency_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

 private:
  std::string run_dir_;
};

}  // namespace

std::unique_ptr<LlmClient> make_replay_client(std::string run_dir) {
  return std::make_unique<ReplayClient>(std::move(run_dir));
}

}  // namespace kforge::llm_detail
