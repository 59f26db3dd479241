// agent/src/ports.cpp — the real adapters of the agent loop's ports (ports.hpp).
#include "kforge/agent/ports.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>

#include "kforge/common/hash.hpp"
#include "kforge/runs/attempt.hpp"
#include "kforge/runs/run_dir.hpp"

namespace kforge::agent {

namespace {

namespace asio = boost::asio;

/// Runs `work` and completes with its value, or with Failure{internal, exception} if it threw.
template <class T, class F>
void complete(const Completion<T>& done, F&& work) {
  std::optional<Expected<T>> r;
  try {
    r.emplace(work());
  } catch (const std::exception& e) {
    r.emplace(Failure{FailureKind::internal, "exception", e.what()});
  }
  done(std::move(*r));
}

class ChatAdapter final : public ChatPort {
 public:
  explicit ChatAdapter(LlmClient& c) : client_(c) {}
  void chat(const ChatRequest& req, Completion<ChatResult> done) override {
    client_.chat_async(req, [done = std::move(done)](ChatResult r) {
      if (r.ok() || r.status == ChatStatus::empty_reply)
        done(std::move(r));
      else
        done(Failure{FailureKind::llm, std::string(to_string(r.status)), r.message});
    });
  }

 private:
  LlmClient& client_;
};

class BuildAdapter final : public BuildPort {
 public:
  BuildAdapter(const AttemptSetup& s, int jobs)
      : setup_(s), pool_(static_cast<std::size_t>(std::max(1, jobs))) {}
  ~BuildAdapter() override { pool_.join(); }
  void build(const BuildJob& job, Completion<backends::Evaluation> done) override {
    asio::post(pool_, [this, job, done = std::move(done)] {
      complete<backends::Evaluation>(done, [&] { return build_candidate(setup_, job.source, job.workdir); });
    });
  }
  std::string key(const BuildJob& job) const override {
    return sha256_hex(setup_.backend_name + "\n" + job.source);
  }

 private:
  const AttemptSetup& setup_;
  asio::thread_pool pool_;
};

class JudgeAdapter final : public JudgePort {
 public:
  JudgeAdapter(const AttemptSetup& s, std::vector<backends::RunnerClient*> runners)
      : setup_(s), runners_(std::move(runners)) {
    for (std::size_t i = 0; i < runners_.size(); ++i)
      threads_.push_back(std::make_unique<asio::thread_pool>(1));
  }
  ~JudgeAdapter() override {
    for (auto& t : threads_) t->join();
  }
  int slots() const override { return static_cast<int>(runners_.size()); }
  std::string slot_name(int slot) const override {
    return runners_[static_cast<std::size_t>(slot)]->config().device + "#" + std::to_string(slot);
  }
  void load(int slot, const backends::TaskRef& ref, Completion<backends::LoadResult> done) override {
    auto* runner = runners_[static_cast<std::size_t>(slot)];
    asio::post(*threads_[static_cast<std::size_t>(slot)], [runner, ref, done = std::move(done)] {
      complete<backends::LoadResult>(done, [&] { return load_task(*runner, ref); });
    });
  }
  void abandon_loads() override {
    for (auto* r : runners_) r->abandon_loads();
  }
  void judge(int slot, JudgeJob job, Completion<Judged> done) override {
    auto* runner = runners_[static_cast<std::size_t>(slot)];
    asio::post(*threads_[static_cast<std::size_t>(slot)],
               [this, runner, job = std::move(job), done = std::move(done)] {
                 complete<Judged>(done, [&] {
                   return judge_candidate(setup_, runner, *job.task, job.ev, job.rec, job.workdir, job.deep);
                 });
               });
  }
  Judged settle(JudgeJob job) override {
    return judge_candidate(setup_, nullptr, *job.task, std::move(job.ev), std::move(job.rec), job.workdir);
  }

 private:
  const AttemptSetup& setup_;
  std::vector<backends::RunnerClient*> runners_;
  std::vector<std::unique_ptr<asio::thread_pool>> threads_;
};

class RenderAdapter final : public RenderPort {
 public:
  explicit RenderAdapter(RenderSetup s) : s_(std::move(s)) {}
  prompts::Prompt render(const EpisodeState& st) override {
    prompts::PromptInput in = prompt_input(*s_.setup, *st.task, s_.trials, s_.device, s_.hardware);
    const auto& t = *st.task->task;
    in.exemplars = s_.store->select(s_.strategy, t.id, t.category, st.task->ref.source, s_.library);
    in.history = st.history;
    in.policy = s_.policy;
    in.token_budget = s_.token_budget;
    in.max_tokens = s_.max_tokens;
    return prompts::render_prompt(in);
  }
  void learned(const EpisodeState& st) override {
    s_.library.push_back({st.task->task->id, st.task->task->category, st.task->ref.source, st.source, ""});
  }

 private:
  RenderSetup s_;
};

class StoreAdapter final : public StorePort {
 public:
  explicit StoreAdapter(RunDir& r) : run_(r) {}
  void record(const AttemptRecord& rec, const AttemptFiles& files) override {
    write_attempt(run_, rec, files);
  }
  std::filesystem::path attempt_dir(const AttemptRecord& rec) const override {
    return run_.attempt_path(rec.task, rec.sample, rec.turn);
  }

 private:
  RunDir& run_;
};

class SteadyClock final : public ClockPort {
 public:
  Stamp now() override {
    const auto t = std::chrono::steady_clock::now().time_since_epoch();
    return {iso8601_utc_now(), std::chrono::duration<double, std::milli>(t).count()};
  }
};

}  // namespace

std::unique_ptr<ChatPort> make_chat_port(LlmClient& client) {
  return std::make_unique<ChatAdapter>(client);
}
std::unique_ptr<BuildPort> make_build_port(const AttemptSetup& setup, int jobs) {
  return std::make_unique<BuildAdapter>(setup, jobs);
}
std::unique_ptr<JudgePort> make_judge_port(const AttemptSetup& setup,
                                           std::vector<backends::RunnerClient*> runners) {
  return std::make_unique<JudgeAdapter>(setup, std::move(runners));
}
std::unique_ptr<RenderPort> make_render_port(RenderSetup setup) {
  return std::make_unique<RenderAdapter>(std::move(setup));
}
std::unique_ptr<StorePort> make_store_port(RunDir& run) {
  return std::make_unique<StoreAdapter>(run);
}
std::unique_ptr<ClockPort> make_clock_port() {
  return std::make_unique<SteadyClock>();
}

}  // namespace kforge::agent
