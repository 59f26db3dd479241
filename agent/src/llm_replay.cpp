// agent/src/llm_replay.cpp — the replay provider: recorded responses from a run directory.
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kforge/runs/run_dir.hpp"
#include "llm_internal.hpp"

namespace kforge::llm_detail {
namespace {

namespace fs = std::filesystem;

class ReplayClient final : public LlmClient {
 public:
  explicit ReplayClient(std::string run_dir) : run_dir_(std::move(run_dir)) {
    // Token counts, cost and model come from the run's records when it has them, so budgets
    // (equal tokens, equal cost) compare the same on replay. A bad record only loses these.
    try {
      for (const auto& rec : load_attempts(run_dir_).records) usage_[key_of(rec)] = rec;
    } catch (const std::exception& e) {
      spdlog::warn("replay: {}: token counts not replayed: {}", run_dir_, e.what());
    }
  }
  std::string_view provider() const override { return "replay"; }
  const std::string& model() const override { return run_dir_; }

  ChatResult chat(const ChatRequest& req) override {
    const auto t0 = std::chrono::steady_clock::now();
    ChatResult r;
    r.attempts = 1;
    r.model = "replay";
    const fs::path task(req.task);
    bool safe = !req.task.empty() && task.is_relative() && req.sample >= 0 && req.turn >= 1;
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
      if (auto it = usage_.find(AttemptKey{req.task, req.sample, req.turn}); it != usage_.end()) {
        r.prompt_tokens = it->second.prompt_tokens;
        r.completion_tokens = it->second.completion_tokens;
        if (it->second.cost_usd > 0) r.cost_usd = it->second.cost_usd;
        if (!it->second.model.empty()) r.model = it->second.model;
      }
    }
    r.latency_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

 private:
  std::string run_dir_;
  std::map<AttemptKey, AttemptRecord> usage_;  // read-only after construction
};

}  // namespace

std::unique_ptr<LlmClient> make_replay_client(std::string run_dir) {
  return std::make_unique<ReplayClient>(std::move(run_dir));
}

}  // namespace kforge::llm_detail
