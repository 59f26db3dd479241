// Tests of runs/: AttemptRecord JSON, RunDir (appends, torn lines, resume, lock, attempt files).
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/attempt.hpp"
#include "kforge/runs/attempt_table.hpp"
#include "kforge/runs/run_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

/// A fresh temporary directory, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kforge_runs_XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    REQUIRE(p != nullptr);
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

AttemptRecord full_record() {
  AttemptRecord r;
  r.task = "level1/19_ReLU";
  r.category = "activation";
  r.difficulty = 2;
  r.sample = 3;
  r.turn = 4;
  r.backend = "cuda";
  r.model = "gpt-x";
  r.outcome = Outcome::output_mismatch;
  r.sub_kind = "values";
  r.message = "max abs err 0.5 at [3, 7]";
  r.llm_status = "ok";
  r.llm_ms = 1234.5;
  r.compile_ms = 1700.25;
  r.check_ms = 40;
  r.bench_ms = 0;
  r.total_ms = 2980.75;
  r.compile_cached = true;
  r.prompt_tokens = 4000000000LL;  // > 2^31
  r.completion_tokens = 812;
  r.cost_usd = 0.0125;
  r.trials_passed = 2;
  r.trials = 5;
  r.max_abs_err = std::numeric_limits<double>::infinity();
  r.max_rel_err = std::numeric_limits<double>::quiet_NaN();
  r.mismatch_fraction = 0.25;
  r.t_candidate_ms = 0.125;
  r.t_reference_ms = 0.25;
  r.t_candidate_p10_ms = 0.12;
  r.t_candidate_p90_ms = 0.13;
  r.cv = 0.02;
  r.speedup = 2.0;
  r.achieved_gbps = 1500.5;
  r.achieved_tflops = 12.5;
  r.source_sha = std::string(64, 'a');
  r.prompt_sha = std::string(64, 'b');
  r.exemplar = "bm25";
  r.temperature = 0.7;
  r.seed = 18446744073709551615ULL;  // max uint64
  r.started_at = "2026-11-22T13:50:28.123Z";
  r.finished_at = "2026-11-22T13:50:31.456Z";
  r.attempt_dir = "attempts/level1/19_ReLU/3/4";
  return r;
}

AttemptRecord rec(const std::string& task, int sample, int turn, Outcome o = Outcome::pass) {
  AttemptRecord r;
  r.task = task;
  r.sample = sample;
  r.turn = turn;
  r.outcome = o;
  r.backend = "cpu";
  return r;
}

void append_raw(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary | std::ios::app);
  out << text;
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("attempt record JSON round-trips every field", "[runs]") {
  AttemptRecord r = full_record();
  std::string line = to_jsonl(r);
  CHECK(line.back() == '\n');
  CHECK(count_lines(line) == 1);
  auto j = nlohmann::json::parse(line);
  CHECK(j["outcome"] == "output_mismatch");
  CHECK(j["max_abs_err"] == "inf");
  CHECK(j["max_rel_err"] == "nan");

  AttemptRecord back = attempt_from_json(j, 1);
  CHECK(to_json(back) == to_json(r));
  CHECK(back.task == r.task);
  CHECK(back.outcome == Outcome::output_mismatch);
  CHECK(back.prompt_tokens == 4000000000LL);
  CHECK(back.seed == 18446744073709551615ULL);
  CHECK(std::isinf(back.max_abs_err));
  CHECK(std::isnan(back.max_rel_err));
  CHECK(back.compile_cached);
  CHECK(back.t_candidate_p90_ms == 0.13);
  CHECK(back.attempt_dir == r.attempt_dir);

  // nlohmann ADL hooks.
  nlohmann::json j2 = r;
  CHECK(j2.get<AttemptRecord>().speedup == 2.0);
}

TEST_CASE("attempt record: missing fields default, unknown fields are ignored", "[runs]") {
  auto j = nlohmann::json::parse(R"({"task":"a/b","turn":2,"outcome":"pass","future_field":[1,2]})");
  AttemptRecord r = attempt_from_json(j, 7);
  CHECK(r.task == "a/b");
  CHECK(r.turn == 2);
  CHECK(r.sample == 0);
  CHECK(r.outcome == Outcome::pass);
  CHECK(r.speedup == 0);
  CHECK(r.message.empty());
  CHECK(r.llm_status.empty());
  // null in a measurement reads as "not measured" (0), in another double as NaN; an integral
  // float is accepted for an int field.
  auto j2 = nlohmann::json::parse(R"({"task":"t","speedup":null,"max_rel_err":null,"sample":2.0})");
  AttemptRecord r2 = attempt_from_json(j2);
  CHECK(r2.speedup == 0);
  CHECK(std::isnan(r2.max_rel_err));
  CHECK(r2.sample == 2);
}

TEST_CASE("attempt record: a measurement not made is written as null and read back as 0", "[runs]") {
  AttemptRecord r;
  r.task = "t";
  r.outcome = Outcome::compile_error;
  r.compile_ms = 12.5;
  const auto j = to_json(r);
  for (const char* k : {"speedup", "t_candidate_ms", "t_reference_ms", "cv", "speedup_ci_low",
                        "achieved_gbps", "tolerance_ratio"}) {
    INFO(k);
    CHECK(j.at(k).is_null());
  }
  CHECK(j.at("compile_ms") == 12.5);
  const AttemptRecord back = attempt_from_json(j);
  CHECK(back.speedup == 0);
  CHECK(back.t_candidate_ms == 0);
  CHECK(back.compile_ms == 12.5);
  // The old form (0.0 for "not measured") reads the same.
  CHECK(attempt_from_json(nlohmann::json::parse(R"({"task":"t","speedup":0.0})")).speedup == 0);
}

TEST_CASE("attempts table: fixed columns, nulls for what was not measured, CSV quoting", "[runs]") {
  AttemptRecord pass, fail;
  pass.task = "a";
  pass.outcome = Outcome::pass;
  pass.trials = pass.trials_passed = 2;
  pass.t_candidate_ms = 0.5;
  pass.t_reference_ms = 1.0;
  pass.speedup = 2.0;
  fail.task = "b,\"x\"";
  fail.sample = 1;
  fail.outcome = Outcome::compile_error;
  fail.message = "line1\nline2";
  const auto& cols = attempt_columns();
  auto col = [&](const std::string& name) {
    for (std::size_t i = 0; i < cols.size(); ++i)
      if (cols[i].name == name) return i;
    FAIL("no column " << name);
    return std::size_t{0};
  };
  const auto rp = attempt_row(pass), rf = attempt_row(fail);
  REQUIRE(rp.size() == cols.size());
  CHECK(*rp[col("speedup")] == "2");
  CHECK(*rp[col("speedup_credited")] == "true");
  CHECK(*rp[col("max_abs_err")] == "0");  // measured: trials ran
  CHECK_FALSE(rf[col("speedup")].has_value());
  CHECK_FALSE(rf[col("t_candidate_ms")].has_value());
  CHECK_FALSE(rf[col("max_abs_err")].has_value());  // no trial
  CHECK(*rf[col("outcome")] == "compile_error");
  CHECK(*rf[col("sample")] == "1");
  const std::string csv = attempts_csv({pass, fail});
  CHECK(csv.rfind("task,category,difficulty,sample,turn,", 0) == 0);
  CHECK(csv.find("\"b,\"\"x\"\"\"") != std::string::npos);
  CHECK(csv.find("\"line1\nline2\"") != std::string::npos);
}

TEST_CASE("attempt record: a bad type or outcome names the line and the field", "[runs]") {
  auto expect_error = [](const char* text, const std::string& field) {
    try {
      attempt_from_json(nlohmann::json::parse(text), 12);
      FAIL("no error for " << text);
    } catch (const RecordError& e) {
      INFO(e.what());
      CHECK(e.line() == 12);
      CHECK(e.field() == field);
      CHECK(std::string(e.what()).find("line 12") != std::string::npos);
      CHECK(std::string(e.what()).find("'" + field + "'") != std::string::npos);
    }
  };
  expect_error(R"({"task":"t","turn":"two"})", "turn");
  expect_error(R"({"task":"t","sample":1.5})", "sample");
  expect_error(R"({"task":"t","speedup":"fast"})", "speedup");
  expect_error(R"({"task":5})", "task");
  expect_error(R"({"task":"t","compile_cached":1})", "compile_cached");
  expect_error(R"({"task":"t","outcome":"passed"})", "outcome");
  expect_error(R"({"task":"t","seed":-1})", "seed");
  expect_error(R"({"task":"t","difficulty":99999999999})", "difficulty");
  CHECK_THROWS_AS(attempt_from_json(nlohmann::json::array(), 3), RecordError);
}

TEST_CASE("attempt paths follow the task id and reject escapes", "[runs]") {
  CHECK(attempt_rel_path("level1/19_ReLU", 0, 1) == fs::path("attempts/level1/19_ReLU/0/1"));
  CHECK(attempt_rel_path("relu", 3, 2) == fs::path("attempts/relu/3/2"));
  CHECK_THROWS_AS(attempt_rel_path("", 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(attempt_rel_path("../etc", 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(attempt_rel_path("a/../../b", 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(attempt_rel_path("/abs", 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(attempt_rel_path("a//b", 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(attempt_rel_path("a/", 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(attempt_rel_path("a", -1, 1), std::invalid_argument);
  CHECK_THROWS_AS(attempt_rel_path("a", 0, 0), std::invalid_argument);
}

TEST_CASE("run dir: create, append, load round-trip and attempt files", "[runs]") {
  TempDir tmp;
  fs::path run = tmp.path / "run1";
  nlohmann::json manifest = {{"config", {{"samples", 2}, {"turns", 3}}}, {"gpu", "none"}};
  {
    RunDir rd = RunDir::create(run, manifest);
    CHECK(rd.path() == fs::absolute(run));
    CHECK(rd.manifest()["schema_version"] == kRunSchemaVersion);
    auto m = nlohmann::json::parse(read_file(run / "manifest.json"));
    CHECK(m["config"]["turns"] == 3);
    CHECK(m["schema_version"] == kRunSchemaVersion);
    CHECK(m.contains("created_at"));

    AttemptRecord a = full_record();
    AttemptRecord b = rec("relu", 1, 1, Outcome::compile_error);
    b.sub_kind = "syntax";
    b.message = "line with \"quotes\"\nand a newline and bad UTF-8: \xff";
    rd.append(a);
    rd.append(b);
    CHECK(rd.attempt_count() == 2);
    std::string text = read_file(run / "attempts.jsonl");
    CHECK(count_lines(text) == 2);
    CHECK(text.back() == '\n');

    auto recs = rd.load_attempts();
    REQUIRE(recs.size() == 2);
    CHECK(to_json(recs[0]) == to_json(a));
    CHECK(recs[1].outcome == Outcome::compile_error);
    CHECK(recs[1].sub_kind == "syntax");
    CHECK(recs[1].message.find("\"quotes\"\nand") != std::string::npos);

    auto keys = rd.finished_keys();
    CHECK(keys.size() == 2);
    CHECK(keys.count(AttemptKey{"relu", 1, 1}) == 1);
    CHECK(rd.is_finished({"level1/19_ReLU", 3, 4}));
    CHECK_FALSE(rd.is_finished({"relu", 1, 2}));

    fs::path p = rd.write_attempt_file("level1/19_ReLU", 3, 4, "kernel.cu", "__global__ void k(){}");
    CHECK(p == rd.attempt_path("level1/19_ReLU", 3, 4) / "kernel.cu");
    CHECK(p == fs::absolute(run) / "attempts/level1/19_ReLU/3/4/kernel.cu");
    CHECK(read_file(p) == "__global__ void k(){}");
    CHECK_THROWS_AS(rd.write_attempt_file("relu", 0, 1, "../x", "y"), std::invalid_argument);
    CHECK_THROWS_AS(rd.write_attempt_file("relu", 0, 1, "a/b", "y"), std::invalid_argument);
    CHECK_THROWS_AS(rd.append(rec("", 0, 1)), std::invalid_argument);
    CHECK_THROWS_AS(rd.append(rec("x", 0, 0)), std::invalid_argument);
    CHECK(rd.attempt_count() == 2);
  }
  // The free loader reads the same records without a RunDir.
  auto loaded = load_attempts(run);
  CHECK(loaded.records.size() == 2);
  CHECK(loaded.warnings.empty());
  // A missing attempts.jsonl is an empty run.
  CHECK(load_attempts(tmp.path).records.empty());
}

TEST_CASE("run dir: create refuses an existing non-empty directory", "[runs]") {
  TempDir tmp;
  fs::path run = tmp.path / "r";
  { RunDir rd = RunDir::create(run, nlohmann::json::object()); }
  CHECK_THROWS_AS(RunDir::create(run, nlohmann::json::object()), std::runtime_error);
  fs::path other = tmp.path / "other";
  fs::create_directories(other);
  write_file(other / "notes.txt", "hi");
  CHECK_THROWS_AS(RunDir::create(other, nlohmann::json::object()), std::runtime_error);
  // An existing empty directory is fine.
  fs::path empty = tmp.path / "empty";
  fs::create_directories(empty);
  CHECK_NOTHROW(RunDir::create(empty, nlohmann::json::object()));
  CHECK_THROWS_AS(RunDir::create(tmp.path / "bad", nlohmann::json::array()), std::invalid_argument);
  // Resume needs a manifest.
  CHECK_THROWS_AS(RunDir::open_for_resume(other), std::runtime_error);
  CHECK_THROWS_AS(RunDir::open_for_resume(tmp.path / "missing"), std::runtime_error);
}

TEST_CASE("run dir: a truncated last line is ignored on load and cut on resume", "[runs]") {
  TempDir tmp;
  fs::path run = tmp.path / "r";
  {
    RunDir rd = RunDir::create(run, {{"config", "x"}});
    rd.append(rec("t", 0, 1, Outcome::compile_error));
    rd.append(rec("t", 0, 2));
  }
  // A writer killed mid-line leaves a prefix without its newline.
  std::string third = to_jsonl(rec("t", 1, 1));
  append_raw(run / "attempts.jsonl", third.substr(0, third.size() / 2));

  auto loaded = load_attempts(run);
  CHECK(loaded.records.size() == 2);
  REQUIRE(loaded.warnings.size() == 1);
  CHECK(loaded.warnings[0].find("line 3") != std::string::npos);
  CHECK(loaded.warnings[0].find("truncated") != std::string::npos);

  {
    RunDir rd = RunDir::open_for_resume(run);
    CHECK(rd.manifest()["config"] == "x");
    CHECK(rd.attempt_count() == 2);
    auto keys = rd.finished_keys();
    CHECK(keys == std::set<AttemptKey>{{"t", 0, 1}, {"t", 0, 2}});
    CHECK_FALSE(rd.is_finished({"t", 1, 1}));
    rd.append(rec("t", 1, 1));  // the resumed run redoes the lost attempt
    CHECK(rd.attempt_count() == 3);
  }
  auto after = load_attempts(run);
  CHECK(after.warnings.empty());
  REQUIRE(after.records.size() == 3);
  CHECK(after.records[2].sample == 1);
  CHECK(count_lines(read_file(run / "attempts.jsonl")) == 3);
}

TEST_CASE("run dir: a complete last line without newline is kept on resume", "[runs]") {
  TempDir tmp;
  fs::path run = tmp.path / "r";
  {
    RunDir rd = RunDir::create(run, nlohmann::json::object());
    rd.append(rec("t", 0, 1));
  }
  std::string line = to_jsonl(rec("t", 0, 2));
  line.pop_back();
  append_raw(run / "attempts.jsonl", line);
  CHECK(load_attempts(run).records.size() == 2);
  {
    RunDir rd = RunDir::open_for_resume(run);
    CHECK(rd.attempt_count() == 2);
    rd.append(rec("t", 0, 3));
  }
  auto loaded = load_attempts(run);
  CHECK(loaded.records.size() == 3);
  CHECK(loaded.warnings.empty());
}

TEST_CASE("run dir: a bad line in the middle is an error naming file, line and field", "[runs]") {
  TempDir tmp;
  fs::path run = tmp.path / "r";
  {
    RunDir rd = RunDir::create(run, nlohmann::json::object());
    rd.append(rec("t", 0, 1));
  }
  append_raw(run / "attempts.jsonl", "{\"task\":\"t\",\"turn\":\"x\"}\n");
  append_raw(run / "attempts.jsonl", to_jsonl(rec("t", 0, 3)));
  try {
    load_attempts(run);
    FAIL("expected a RecordError");
  } catch (const RecordError& e) {
    INFO(e.what());
    CHECK(e.line() == 2);
    CHECK(e.field() == "turn");
    CHECK(e.file().find("attempts.jsonl") != std::string::npos);
  }
  // Garbage JSON that is followed by more lines is not a torn write either.
  TempDir tmp2;
  fs::path run2 = tmp2.path / "r";
  { RunDir rd = RunDir::create(run2, nlohmann::json::object()); }
  append_raw(run2 / "attempts.jsonl", "{\"task\":\n");
  append_raw(run2 / "attempts.jsonl", to_jsonl(rec("t", 0, 1)));
  CHECK_THROWS_AS(load_attempts(run2), RecordError);
  CHECK_THROWS_AS(RunDir::open_for_resume(run2), RecordError);
}

TEST_CASE("run dir: the lock refuses a second writer", "[runs]") {
  TempDir tmp;
  fs::path run = tmp.path / "r";
  {
    RunDir first = RunDir::create(run, nlohmann::json::object());
    first.append(rec("t", 0, 1));
    // Same process, second handle.
    CHECK_THROWS_AS(RunDir::open_for_resume(run), std::runtime_error);
    try {
      RunDir::open_for_resume(run);
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()).find("locked") != std::string::npos);
    }
    // Another process.
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 3;
      try {
        RunDir::open_for_resume(run);
        code = 0;
      } catch (const std::runtime_error&) {
        code = 1;
      } catch (...) {
        code = 2;
      }
      ::_exit(code);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);  // refused
    // Moving the RunDir keeps the lock held.
    RunDir moved = std::move(first);
    CHECK_THROWS_AS(RunDir::open_for_resume(run), std::runtime_error);
    moved.append(rec("t", 0, 2));
  }
  // Released at destruction: resuming works now.
  RunDir again = RunDir::open_for_resume(run);
  CHECK(again.attempt_count() == 2);
}

TEST_CASE("run dir: concurrent appends never interleave lines", "[runs]") {
  TempDir tmp;
  fs::path run = tmp.path / "r";
  RunDir rd = RunDir::create(run, nlohmann::json::object());
  constexpr int kThreads = 6, kEach = 40;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&rd, t] {
      for (int i = 0; i < kEach; ++i) {
        AttemptRecord r = rec("task" + std::to_string(t), i, 1, Outcome::output_mismatch);
        r.message = std::string(300 + i * 7, 'm');  // lines of varying length
        rd.append(r);
      }
    });
  for (auto& t : ts) t.join();
  auto recs = rd.load_attempts();
  CHECK(recs.size() == kThreads * kEach);
  CHECK(rd.finished_keys().size() == kThreads * kEach);
  CHECK(load_attempts(run).warnings.empty());
}

TEST_CASE("iso8601_utc_now has the documented shape", "[runs]") {
  std::string s = iso8601_utc_now();
  REQUIRE(s.size() == 24);
  CHECK(s[4] == '-');
  CHECK(s[10] == 'T');
  CHECK(s[19] == '.');
  CHECK(s.back() == 'Z');
}
