// [agent] retrieval (code tokeniser, BM25, exemplar strategies) and prompt rendering.
#include <algorithm>

#include "catch.hpp"
#include "kforge/common/util.hpp"
#include "kforge/prompts/prompts.hpp"
#include "kforge/retrieval/retrieval.hpp"

using namespace kforge;

TEST_CASE("tokenize_code splits identifiers and keeps dotted operators", "[agent]") {
  auto t = retrieval::tokenize_code("y = torch.softmax(logSumExp_rows, dim=1)");
  auto has = [&](const char* w) { return std::find(t.begin(), t.end(), w) != t.end(); };
  CHECK(has("torch.softmax"));
  CHECK(has("softmax"));
  CHECK(has("log"));
  CHECK(has("sum"));
  CHECK(has("exp"));
  CHECK(has("rows"));
  CHECK(has("logsumexp_rows"));
  CHECK_FALSE(has("1"));
}

TEST_CASE("BM25 ranks the document sharing rare terms first", "[agent]") {
  retrieval::Bm25 bm({"torch.relu elementwise max zero", "layer_norm mean variance normalize rows",
                      "gemm matmul tile block"});
  auto s = bm.scores("normalize each row by its mean and variance");
  REQUIRE(s.size() == 3);
  CHECK(s[1] > s[0]);
  CHECK(s[1] > s[2]);
  CHECK(s[0] == 0.0);
}

TEST_CASE("exemplar strategies never leak the task's own kernel", "[agent]") {
  retrieval::ExemplarStore store(kforge_home() / "prompts/exemplars/cpu",
                                 [](const std::string&) { return ""; });
  REQUIRE(store.exemplars().size() >= 10);
  REQUIRE(store.add_exemplar().has_value());
  auto add = store.select(retrieval::Strategy::add, "x/y", "math", "");
  REQUIRE(add.size() == 1);
  CHECK(add[0].task_id == "add");
  // Its category's only exemplar is its own: another is chosen by operations, never its own.
  for (const auto& e : store.select(retrieval::Strategy::category, "activation/gelu_tanh", "activation", ""))
    CHECK(e.task_id != "activation/gelu_tanh");
  auto cat = store.select(retrieval::Strategy::category, "activation/mish", "activation", "");
  REQUIRE(cat.size() == 1);
  CHECK(cat[0].task_id == "activation/gelu_tanh");
  auto bm =
      store.select(retrieval::Strategy::bm25, "pooling/avg", "pooling", "max_pool2d kernel_size stride");
  REQUIRE(bm.size() == 1);
  CHECK(bm[0].task_id == "pooling/max_pool2d");
  std::vector<retrieval::Exemplar> lib{{"math/a", "math", "", "k1", ""}, {"loss/b", "loss", "", "k2", ""}};
  auto l = store.select(retrieval::Strategy::library, "loss/c", "loss", "", lib);
  REQUIRE(l.size() == 1);
  CHECK(l[0].task_id == "loss/b");
}

TEST_CASE("render_prompt: task table, feedback and history policy", "[agent]") {
  prompts::PromptInput in;
  in.backend = "cpu";
  in.task_id = "math/x";
  in.category = "math";
  in.reference = "class Model: pass";
  in.device = "test-cpu";
  in.tensors = {{"input", "x", "input", "float32", {4, 8}}, {"output", "out", "output", "float32", {4}}};
  auto past = [](int turn, const char* src, Outcome o, const char* sub, const char* detail, double sp,
                 double gb) {
    prompts::PastAttempt a;
    a.turn = turn;
    a.source = src;
    a.outcome = o;
    a.sub_kind = sub;
    a.detail = detail;
    a.speedup = sp;
    a.achieved_gbps = gb;
    return a;
  };
  in.history = {past(1, "int old;", Outcome::compile_error, "syntax", "kernel.cpp:3:1: error: OLDERR", 0, 0),
                past(2, "int newer;", Outcome::pass, "", "", 2.5, 12.25)};
  auto p = prompts::render_prompt(in);
  CHECK(p.system.find("test-cpu") != std::string::npos);
  CHECK(p.user.find("| 0 | input | x | input | [4, 8] | float32 |") != std::string::npos);
  CHECK(p.user.find("kf_forward") != std::string::npos);
  CHECK(p.user.find("2.50x") != std::string::npos);
  CHECK(p.user.find("12.25 GB/s") != std::string::npos);
  CHECK(p.user.find("OLDERR") != std::string::npos);    // the trajectory's line for turn 1
  CHECK(p.user.find("int old;") == std::string::npos);  // policy last: turn 1's code not in full
  in.policy = prompts::HistoryPolicy::all;
  p = prompts::render_prompt(in);
  CHECK(p.user.find("int old;") != std::string::npos);
  CHECK(p.user.find("{{") == std::string::npos);
}
