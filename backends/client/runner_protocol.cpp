// The JSON mapping of the judge's protocol (runner_protocol.hpp). Compiled into kforge_backends
// and into kforge-runner, so that both ends read and write the same fields.
#include "kforge/backends/runner_protocol.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace kforge::backends {

using json = nlohmann::json;

namespace {
constexpr std::array<std::pair<JudgeError, std::string_view>, 5> kJudgeErrors{{
    {JudgeError::python_exception, "python_exception"},
    {JudgeError::runner, "runner"},
    {JudgeError::protocol, "protocol"},
    {JudgeError::reference_failed, "reference_failed"},
    {JudgeError::unjudgeable, "unjudgeable"},
}};
}  // namespace

std::string_view to_string(JudgeError e) {
  for (const auto& [k, name] : kJudgeErrors)
    if (k == e) return name;
  return "runner";
}

std::optional<JudgeError> judge_error_from_string(std::string_view s) {
  for (const auto& [k, name] : kJudgeErrors)
    if (name == s) return k;
  return std::nullopt;
}

Failure judge_failure(JudgeError error, const std::string& text) {
  switch (error) {
    case JudgeError::reference_failed:
      return {FailureKind::reference, "reference_failed", text};
    case JudgeError::unjudgeable:  // the reference ran but cannot judge: the task's, not failed
      return {FailureKind::reference, "unjudgeable", text};
    case JudgeError::python_exception:
    case JudgeError::protocol:
    case JudgeError::runner:
      break;
  }
  return {FailureKind::judge, std::string(to_string(error)), text};
}

namespace protocol {

namespace {

constexpr std::array<std::string_view, 11> kCommands{
    "hello",   "load",          "reference", "check",        "bench", "peaks",
    "prewarm", "profile_setup", "testblock", "triton_bench", "quit"};
static_assert(kCommands.size() == std::variant_size_v<Request::Body>, "a name per command");

Failure protocol_failure(std::string message) {
  return {FailureKind::judge, "judge_protocol", std::move(message)};
}

/// Reads the fields of one JSON object into typed members, keeping the first misfit: "<what>:
/// field "<path>": <why>". A field that is absent (or null, when optional) keeps its default.
class Reader {
 public:
  Reader(const json& j, std::string what, std::string prefix = "")
      : j_(j), what_(std::move(what)), prefix_(std::move(prefix)) {}

  template <class T>
  void required(const char* key, T& out) {
    read(key, out, true);
  }
  template <class T>
  void optional(const char* key, T& out) {
    read(key, out, false);
  }
  /// A figure: a number, or null for a NaN or an infinity (decoded as `if_null`).
  void figure(const char* key, double& out, double if_null = std::numeric_limits<double>::infinity()) {
    auto it = j_.find(key);
    if (it == j_.end()) return;
    if (it->is_null())
      out = if_null;
    else
      convert(*it, out, key);
  }
  /// The object at `key` read by `fill(Reader&)`; absent: false (an error when required).
  template <class F>
  bool object(const char* key, bool required, F&& fill) {
    auto it = j_.find(key);
    if (it == j_.end() || (!required && it->is_null())) {
      if (required) fail(key, "missing");
      return false;
    }
    if (!it->is_object()) return fail(key, std::string("expected an object, got ") + it->type_name()), false;
    Reader sub(*it, what_, prefix_ + key + ".");
    fill(sub);
    if (!sub.ok() && ok()) error_ = sub.error_;
    return true;
  }
  /// The array of objects at `key`, each appended to `out` and read by `fill(Reader&, T&)`.
  template <class T, class F>
  void objects(const char* key, bool required, std::vector<T>& out, F&& fill) {
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) fail(key, "missing");
      return;
    }
    if (!expect(it->is_array(), *it, key, "an array")) return;
    for (std::size_t i = 0; i < it->size() && ok(); ++i) {
      const std::string at = std::string(key) + "[" + std::to_string(i) + "]";
      if (!expect((*it)[i].is_object(), (*it)[i], at, "an object")) return;
      Reader sub((*it)[i], what_, prefix_ + at + ".");
      fill(sub, out.emplace_back());
      if (!sub.ok()) error_ = sub.error_;
    }
  }
  bool has(const char* key) const { return j_.contains(key); }
  void fail(const std::string& key, const std::string& why) {
    if (error_.empty()) error_ = what_ + ": field \"" + prefix_ + key + "\": " + why;
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  template <class T>
  void read(const char* key, T& out, bool required) {
    auto it = j_.find(key);
    if (it == j_.end() || (!required && it->is_null())) {
      if (required) fail(key, "missing");
      return;
    }
    convert(*it, out, key);
  }
  bool expect(bool fits, const json& v, const std::string& key, const char* want) {
    if (!fits) fail(key, std::string("expected ") + want + ", got " + v.type_name());
    return fits;
  }
  void convert(const json& v, std::string& out, const std::string& key) {
    if (expect(v.is_string(), v, key, "a string")) out = v.get<std::string>();
  }
  void convert(const json& v, bool& out, const std::string& key) {
    if (expect(v.is_boolean(), v, key, "a boolean")) out = v.get<bool>();
  }
  void convert(const json& v, int& out, const std::string& key) {
    if (expect(v.is_number_integer(), v, key, "an integer")) out = v.get<int>();
  }
  void convert(const json& v, int64_t& out, const std::string& key) {
    if (expect(v.is_number_integer(), v, key, "an integer")) out = v.get<int64_t>();
  }
  void convert(const json& v, double& out, const std::string& key) {
    if (expect(v.is_number(), v, key, "a number")) out = v.get<double>();
  }
  void convert(const json& v, std::optional<bool>& out, const std::string& key) {
    if (expect(v.is_boolean(), v, key, "a boolean")) out = v.get<bool>();
  }
  void convert(const json& v, std::optional<int64_t>& out, const std::string& key) {
    if (expect(v.is_number_integer(), v, key, "an integer")) out = v.get<int64_t>();
  }
  void convert(const json& v, std::optional<std::string>& out, const std::string& key) {
    if (expect(v.is_string(), v, key, "a string")) out = v.get<std::string>();
  }
  void convert(const json& v, HostKind& out, const std::string& key) {
    const auto h = v.is_string() ? parse_host_kind(v.get<std::string>()) : std::nullopt;
    if (expect(h.has_value(), v, key, "\"native\" or \"python\"")) out = *h;
  }
  void convert(const json& v, Outcome& out, const std::string& key) {
    const auto o = v.is_string() ? outcome_from_string(v.get<std::string>()) : std::nullopt;
    if (expect(o.has_value(), v, key, "an outcome name")) out = *o;
  }
  template <class T>
  void convert(const json& v, std::vector<T>& out, const std::string& key) {
    if (!expect(v.is_array(), v, key, "an array")) return;
    out.assign(v.size(), T{});
    for (std::size_t i = 0; i < v.size() && ok(); ++i)
      convert(v[i], out[i], key + "[" + std::to_string(i) + "]");
  }
  void convert(const json& v, std::map<std::string, double>& out, const std::string& key) {
    if (!expect(v.is_object(), v, key, "an object")) return;
    for (const auto& [k, x] : v.items())
      if (expect(x.is_number(), x, key + "." + k, "a number")) out[k] = x.get<double>();
  }
  void convert(const json& v, Tolerances& out, const std::string& key) {
    if (!expect(v.is_object(), v, key, "an object")) return;
    for (const auto& [k, x] : v.items()) {
      const bool pair = x.is_array() && x.size() == 2 && x[0].is_number() && x[1].is_number();
      if (expect(pair, x, key + "." + k, "[atol, rtol]")) out[k] = {x[0].get<double>(), x[1].get<double>()};
    }
  }

  const json& j_;
  std::string what_, prefix_, error_;
};

json tolerances_json(const Tolerances& t) {
  json j = json::object();
  for (const auto& [k, v] : t) j[k] = {v.first, v.second};
  return j;
}

// ---- Requests ----

void write(json& j, const Candidate& c) {
  j["artifact"] = c.artifact;
  j["host"] = std::string(to_string(c.host));
  if (!c.allow_ops.empty()) j["allow_ops"] = c.allow_ops;
}
void read(Reader& r, Candidate& c) {
  r.required("artifact", c.artifact);
  r.required("host", c.host);
  r.optional("allow_ops", c.allow_ops);
}

void write(json&, const HelloRequest&) {}
void read(Reader&, HelloRequest&) {}
void write(json&, const QuitRequest&) {}
void read(Reader&, QuitRequest&) {}

void write(json& j, const LoadRequest& q) {
  j.update({{"task", q.task},
            {"file", q.file},
            {"source", q.source},
            {"device", q.device},
            {"model_seed", q.model_seed},
            {"flops", q.flops},
            {"bytes", q.bytes},
            {"module_mode", q.module_mode},
            {"probe_seed", q.probe_seed}});
  if (q.profile_seed) j["profile_seed"] = *q.profile_seed;
}
void read(Reader& r, LoadRequest& q) {
  r.required("task", q.task);
  r.optional("file", q.file);
  r.required("source", q.source);
  r.optional("device", q.device);
  r.optional("model_seed", q.model_seed);
  r.optional("flops", q.flops);
  r.optional("bytes", q.bytes);
  r.optional("module_mode", q.module_mode);
  r.optional("probe_seed", q.probe_seed);
  r.optional("profile_seed", q.profile_seed);
}

void write(json& j, const ReferenceRequest& q) {
  j.update({{"trials", q.trials}, {"seed", q.seed}});
}
void read(Reader& r, ReferenceRequest& q) {
  r.optional("trials", q.trials);
  r.optional("seed", q.seed);
}

void write(json& j, const CheckRequest& q) {
  write(j, q.candidate);
  j.update({{"trials", q.trials},
            {"seed", q.seed},
            {"deadline_ms", q.deadline_ms},
            {"tolerances", tolerances_json(q.tolerances)},
            {"perturb_parameters", q.perturb_parameters},
            {"wide_inputs", q.wide_inputs}});
}
void read(Reader& r, CheckRequest& q) {
  read(r, q.candidate);
  r.optional("trials", q.trials);
  r.optional("seed", q.seed);
  r.optional("deadline_ms", q.deadline_ms);
  r.optional("tolerances", q.tolerances);
  r.optional("perturb_parameters", q.perturb_parameters);
  r.optional("wide_inputs", q.wide_inputs);
}

void write(json& j, const BenchRequest& q) {
  if (q.candidate) write(j, *q.candidate);
  j.update({{"reps", q.reps},
            {"min_reps", q.min_reps},
            {"warmup", q.warmup},
            {"budget_ms", q.budget_ms},
            {"seed", q.seed},
            {"deadline_ms", q.deadline_ms},
            {"baseline", q.compile_baseline ? "compile" : "eager"},
            {"reference_before", q.reference_before}});
  if (q.peak_bytes_per_s) j["peak_bytes_per_s"] = *q.peak_bytes_per_s;
  if (!q.tolerances.empty()) j["tolerances"] = tolerances_json(q.tolerances);
}
void read(Reader& r, BenchRequest& q) {
  if (r.has("artifact")) read(r, q.candidate.emplace());
  r.optional("reps", q.reps);
  r.optional("min_reps", q.min_reps);
  r.optional("warmup", q.warmup);
  r.optional("budget_ms", q.budget_ms);
  r.optional("seed", q.seed);
  r.optional("deadline_ms", q.deadline_ms);
  std::string baseline = "eager";
  r.optional("baseline", baseline);
  if (baseline != "eager" && baseline != "compile") r.fail("baseline", "expected \"eager\" or \"compile\"");
  q.compile_baseline = baseline == "compile";
  double peak = 0;
  r.optional("peak_bytes_per_s", peak);
  if (peak > 0) q.peak_bytes_per_s = peak;
  r.optional("reference_before", q.reference_before);
  r.optional("tolerances", q.tolerances);
}

void write(json& j, const PeaksRequest& q) {
  if (!q.device.empty()) j["device"] = q.device;
}
void read(Reader& r, PeaksRequest& q) {
  r.optional("device", q.device);
}

void write(json& j, const PrewarmRequest& q) {
  j["host"] = std::string(to_string(q.host));
  if (!q.device.empty()) j["device"] = q.device;
}
void read(Reader& r, PrewarmRequest& q) {
  r.required("host", q.host);
  r.optional("device", q.device);
}

void write(json& j, const ProfileSetupRequest& q) {
  write(j, q.candidate);
  j.update({{"dir", q.dir}, {"seed", q.seed}});
}
void read(Reader& r, ProfileSetupRequest& q) {
  read(r, q.candidate);
  r.required("dir", q.dir);
  r.optional("seed", q.seed);
}

void write(json& j, const TestblockRequest& q) {
  write(j, q.candidate);
  j.update({{"trials", q.trials},
            {"seed", q.seed},
            {"deadline_ms", q.deadline_ms},
            {"reference_deadline_ms", q.reference_deadline_ms},
            {"tolerances", tolerances_json(q.tolerances)},
            {"source", q.source},
            {"test_source", q.test_source},
            {"test_function", q.test_function},
            {"entries", q.entries}});
  if (!q.device.empty()) j["device"] = q.device;
}
void read(Reader& r, TestblockRequest& q) {
  read(r, q.candidate);
  r.optional("trials", q.trials);
  r.optional("seed", q.seed);
  r.optional("deadline_ms", q.deadline_ms);
  r.optional("reference_deadline_ms", q.reference_deadline_ms);
  r.optional("tolerances", q.tolerances);
  r.required("source", q.source);
  r.required("test_source", q.test_source);
  r.optional("test_function", q.test_function);
  r.optional("entries", q.entries);
  r.optional("device", q.device);
}

void write(json& j, const TritonBenchRequest& q) {
  j["seed"] = q.seed;
}
void read(Reader& r, TritonBenchRequest& q) {
  r.optional("seed", q.seed);
}

/// The body of command `c`, default-constructed (the variant's alternative of that index).
template <std::size_t I = 0>
Request::Body body_of(Command c) {
  if constexpr (I + 1 < std::variant_size_v<Request::Body>)
    if (static_cast<std::size_t>(c) != I) return body_of<I + 1>(c);
  return Request::Body(std::in_place_index<I>);
}

}  // namespace

std::string_view to_string(Command c) {
  return kCommands[static_cast<std::size_t>(c)];
}

std::optional<Command> command_from_string(std::string_view s) {
  for (std::size_t i = 0; i < kCommands.size(); ++i)
    if (kCommands[i] == s) return static_cast<Command>(i);
  return std::nullopt;
}

json encode(const Request& r) {
  json j{{"cmd", std::string(to_string(r.command()))}};
  if (!r.id.empty()) j["id"] = r.id;
  if (r.timed_lock_held) j["timed_lock_held"] = true;
  if (r.timed_lock_shared) j["timed_lock_shared"] = true;
  std::visit([&](const auto& body) { write(j, body); }, r.body);
  return j;
}

Expected<Request> decode_request(const json& j) {
  if (!j.is_object()) return protocol_failure(std::string("request: not a JSON object but ") + j.type_name());
  Reader envelope(j, "request");
  std::string cmd;
  envelope.required("cmd", cmd);
  if (!envelope.ok()) return protocol_failure(envelope.error());
  const std::optional<Command> c = command_from_string(cmd);
  if (!c) return protocol_failure("request: unknown command '" + cmd.substr(0, 80) + "'");
  Request q(body_of(*c));
  Reader r(j, cmd + " request");
  r.optional("id", q.id);
  r.optional("timed_lock_held", q.timed_lock_held);
  r.optional("timed_lock_shared", q.timed_lock_shared);
  std::visit([&](auto& body) { read(r, body); }, q.body);
  if (!r.ok()) return protocol_failure(r.error());
  return q;
}

// ---- Replies ----

namespace {

json ok_json() {
  return json{{"ok", true}};
}

void read(Reader& r, TensorSpec& s) {
  r.required("name", s.name);
  r.optional("kind", s.kind);
  r.required("dtype", s.dtype);
  r.required("shape", s.shape);
}
json spec_json(const TensorSpec& s) {
  return {{"name", s.name}, {"kind", s.kind}, {"shape", s.shape}, {"dtype", s.dtype}};
}
json specs_json(const std::vector<TensorSpec>& v) {
  json a = json::array();
  for (const auto& s : v) a.push_back(spec_json(s));
  return a;
}

void read(Reader& r, DeviceInfo& d) {
  r.required("index", d.index);
  r.optional("name", d.name);
  r.optional("cc", d.cc);
  r.optional("memory_bytes", d.memory_bytes);
  r.optional("timed_lock", d.timed_lock);
}

void read(Reader& r, TimingStats& s) {
  r.required("median_ms", s.median_ms);
  r.optional("p10_ms", s.p10_ms);
  r.optional("p90_ms", s.p90_ms);
  r.optional("mean_ms", s.mean_ms);
  r.optional("min_ms", s.min_ms);
  r.optional("cv", s.cv);
  r.optional("reps", s.reps);
  r.optional("batches", s.batches);
}
json stats_json(const TimingStats& s) {
  return {{"median_ms", s.median_ms}, {"p10_ms", s.p10_ms}, {"p90_ms", s.p90_ms}, {"mean_ms", s.mean_ms},
          {"min_ms", s.min_ms},       {"cv", s.cv},         {"reps", s.reps},     {"batches", s.batches}};
}

const char* name_of(const HelloReply*) {
  return "hello reply";
}
const char* name_of(const LoadReply*) {
  return "load reply";
}
const char* name_of(const ReferenceReply*) {
  return "reference reply";
}
const char* name_of(const CheckReply*) {
  return "check reply";
}
const char* name_of(const BenchReply*) {
  return "bench reply";
}
const char* name_of(const PeaksReply*) {
  return "peaks reply";
}
const char* name_of(const PrewarmReply*) {
  return "prewarm reply";
}
const char* name_of(const ProfileSetupReply*) {
  return "profile_setup reply";
}
const char* name_of(const TritonBenchReply*) {
  return "triton_bench reply";
}

void read(Reader& r, HelloReply& h) {
  r.optional("libtorch", h.libtorch);
  r.optional("torch", h.torch);
  r.optional("python", h.python);
  r.optional("triton", h.triton);
  r.optional("runner_cuda", h.runner_cuda);
  r.object("reference_tf32", false, [&](Reader& t) {
    t.optional("matmul", h.reference_tf32_matmul);
    t.optional("cudnn", h.reference_tf32_cudnn);
  });
  r.optional("cuda_available", h.cuda_available);
  r.objects("devices", false, h.devices, [](Reader& d, DeviceInfo& x) { read(d, x); });
  r.optional("torch_cuda", h.torch_cuda);
  r.optional("timed_lock_dir", h.timed_lock_dir);
  r.optional("timed_lock_unavailable", h.timed_lock_unavailable);
}

void read(Reader& r, LoadReply& l) {
  r.objects("inputs", true, l.inputs, [](Reader& t, TensorSpec& x) { read(t, x); });
  r.objects("outputs", true, l.outputs, [](Reader& t, TensorSpec& x) { read(t, x); });
  r.optional("input_bytes", l.input_bytes);
  r.optional("flops", l.flops);
  r.optional("bytes", l.bytes);
  r.optional("flops_source", l.flops_source);
  r.optional("bytes_source", l.bytes_source);
  r.optional("load_ms", l.load_ms);
  r.optional("cached", l.cached);
  r.optional("tasks_held", l.tasks_held);
}

void read(Reader& r, ReferenceReply& x) {
  r.required("ms", x.ms);
}

void read(Reader& r, CheckReply& c) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.required("outcome", c.outcome);
  r.optional("sub_kind", c.sub_kind);
  r.optional("message", c.message);
  r.optional("trials", c.trials);
  r.optional("trials_passed", c.trials_passed);
  r.figure("max_abs_err", c.max_abs_err);
  r.figure("max_rel_err", c.max_rel_err);
  r.figure("mismatch_fraction", c.mismatch_fraction);
  r.figure("tolerance_ratio", c.tolerance_ratio);
  r.optional("worst_index", c.worst_index);
  r.figure("expected", c.expected, nan);
  r.figure("actual", c.actual, nan);
  r.optional("check_ms", c.check_ms);
  r.optional("phases", c.phases_ms);
  r.optional("checks", c.checks);
  r.optional("correct", c.correct);
  r.optional("correct_message", c.correct_message);
  r.optional("gold_runs", c.gold_runs);
  r.object("trial", false, [&](Reader& t) {
    t.required("index", c.trial.index);
    t.optional("of", c.trial.of);
    t.optional("kind", c.trial.kind);
    t.optional("seed", c.trial.seed);
    t.figure("input_scale", c.trial.input_scale);
  });
}

void read_timings(Reader& r, BenchReply& b) {
  b.timed_candidate = r.object("candidate", false, [&](Reader& s) {
    read(s, b.candidate);
    s.optional("samples_ms", b.candidate_samples);
  });
  r.object("reference", true, [&](Reader& s) {
    read(s, b.reference);
    s.optional("samples_ms", b.reference_samples);
  });
  r.object("reference_compile", false, [&](Reader& s) { read(s, b.reference_compile.emplace()); });
  r.object("reference_before", false, [&](Reader& s) { read(s, b.reference_before.emplace()); });
  r.optional("candidate_ms", b.candidate_ms);
  r.required("reference_ms", b.reference_ms);
  r.figure("reference_before_ms", b.reference_before_ms);
  r.optional("speedup", b.speedup);
  std::vector<double> ci;
  r.optional("speedup_ci", ci);
  if (ci.size() == 2) {
    b.speedup_ci_low = ci[0];
    b.speedup_ci_high = ci[1];
  } else if (!ci.empty()) {
    r.fail("speedup_ci", "expected [low, high]");
  }
}

void read(Reader& r, BenchReply& b) {
  if (r.has("outcome")) {  // the candidate failed while being timed
    r.required("outcome", b.outcome);
    r.optional("sub_kind", b.sub_kind);
    r.optional("message", b.message);
    return;
  }
  b.outcome = Outcome::pass;
  read_timings(r, b);
  r.optional("sets", b.sets);
  r.optional("sets_per_window", b.sets_per_window);
  r.optional("verified_batches", b.verified_batches);
  r.optional("round_trip_ms", b.round_trip_ms);
  r.optional("lead_in_ms", b.lead_in_ms);
  r.optional("gpu_base_ms", b.gpu_base_ms);
  r.optional("lead_in_length_ms", b.lead_in_length_ms);
  r.optional("lead_in_preempted", b.lead_in_preempted);
  r.optional("lead_in_max_gap_us", b.lead_in_max_gap_us);
  r.optional("host_reported", b.host_reported_ms);
  r.optional("judge_side", b.judge_side);
  r.optional("phases", b.phases_ms);
  r.figure("speed_of_light_ms", b.speed_of_light_ms);
  r.figure("peak_bytes_per_s", b.peak_bytes_per_s);
  r.figure("launch_floor_ms", b.launch_floor_ms);
  r.optional("timing_anomaly", b.timing_anomaly);
  r.optional("timing_anomaly_kind", b.timing_anomaly_kind);
  r.optional("timing_unstable", b.timing_unstable);
  r.optional("flags", b.flags);
  r.optional("bench_ms", b.bench_ms);
}

void read(Reader& r, PeaksReply& p) {
  r.optional("device", p.device);
  r.figure("dram_bytes_per_s", p.dram_bytes_per_s);
  r.figure("flops_per_s", p.flops_per_s);
  r.optional("method", p.method);
}

void read(Reader& r, PrewarmReply& p) {
  r.required("started", p.started);
}

void read(Reader& r, ProfileSetupReply& p) {
  r.required("candidate", p.candidate);
  r.required("reference", p.reference);
}

void read(Reader& r, TritonBenchReply& t) {
  r.required("ms", t.ms);
}

/// The failure an {"ok":false} reply reports.
Failure error_of(const json& j, const std::string& name) {
  Reader r(j, name);
  std::string error, message;
  r.required("error", error);
  r.optional("message", message);
  if (!r.ok()) return protocol_failure(r.error());
  if (auto e = judge_error_from_string(error)) return judge_failure(*e, message);
  return protocol_failure(name + ": field \"error\": unknown value '" + error.substr(0, 80) +
                          "': " + message);
}

}  // namespace

json encode(const ErrorReply& r) {
  return {{"ok", false}, {"error", std::string(to_string(r.error))}, {"message", r.message}};
}

json encode(const HelloReply& h) {
  json j = ok_json();
  j.update({{"libtorch", h.libtorch},
            {"torch", h.torch},
            {"python", h.python},
            {"runner_cuda", h.runner_cuda},
            {"reference_tf32", {{"matmul", h.reference_tf32_matmul}, {"cudnn", h.reference_tf32_cudnn}}},
            {"cuda_available", h.cuda_available},
            {"timed_lock_dir", h.timed_lock_dir}});
  j["triton"] = h.triton ? json(*h.triton) : json(nullptr);
  j["devices"] = json::array();
  for (const auto& d : h.devices)
    j["devices"].push_back({{"index", d.index},
                            {"name", d.name},
                            {"cc", d.cc},
                            {"memory_bytes", d.memory_bytes},
                            {"timed_lock", d.timed_lock}});
  if (!h.torch_cuda.empty()) j["torch_cuda"] = h.torch_cuda;
  if (!h.timed_lock_unavailable.empty()) j["timed_lock_unavailable"] = h.timed_lock_unavailable;
  return j;
}

json encode(const LoadReply& l) {
  json j = ok_json();
  j.update({{"inputs", specs_json(l.inputs)},
            {"outputs", specs_json(l.outputs)},
            {"input_bytes", l.input_bytes},
            {"flops", l.flops},
            {"bytes", l.bytes},
            {"flops_source", l.flops_source},
            {"bytes_source", l.bytes_source},
            {"load_ms", l.load_ms},
            {"cached", l.cached},
            {"tasks_held", l.tasks_held}});
  return j;
}

json encode(const ReferenceReply& r) {
  return {{"ok", true}, {"ms", r.ms}};
}

json encode(const CheckReply& c) {
  json j = ok_json();
  j.update({{"outcome", std::string(to_string(c.outcome))},
            {"sub_kind", c.sub_kind},
            {"message", c.message},
            {"trials", c.trials},
            {"trials_passed", c.trials_passed},
            {"max_abs_err", c.max_abs_err},
            {"max_rel_err", c.max_rel_err},
            {"mismatch_fraction", c.mismatch_fraction},
            {"tolerance_ratio", c.tolerance_ratio},
            {"check_ms", c.check_ms},
            {"phases", c.phases_ms},
            {"checks", c.checks}});
  if (!c.worst_index.empty())
    j.update({{"worst_index", c.worst_index}, {"expected", c.expected}, {"actual", c.actual}});
  if (c.correct) j["correct"] = *c.correct;
  if (!c.correct_message.empty()) j["correct_message"] = c.correct_message;
  if (c.gold_runs > 0) j["gold_runs"] = c.gold_runs;
  if (c.trial.index > 0)
    j["trial"] = {{"index", c.trial.index},
                  {"of", c.trial.of},
                  {"kind", c.trial.kind},
                  {"seed", c.trial.seed},
                  {"input_scale", c.trial.input_scale}};
  return j;
}

namespace {
void write_timings(json& j, const BenchReply& b) {
  if (b.timed_candidate) {
    j["candidate"] = stats_json(b.candidate);
    j["candidate"]["samples_ms"] = b.candidate_samples;
    j["candidate_ms"] = b.candidate_ms;
    j["speedup"] = b.speedup;
    j["speedup_ci"] = {b.speedup_ci_low, b.speedup_ci_high};
  }
  j["reference"] = stats_json(b.reference);
  j["reference"]["samples_ms"] = b.reference_samples;
  j["reference_ms"] = b.reference_ms;
  if (b.reference_compile) j["reference_compile"] = stats_json(*b.reference_compile);
  if (b.reference_before) {
    j["reference_before"] = stats_json(*b.reference_before);
    j["reference_before_ms"] = b.reference_before_ms;
  }
}
}  // namespace

json encode(const BenchReply& b) {
  json j = ok_json();
  if (b.outcome != Outcome::pass) {
    j.update(
        {{"outcome", std::string(to_string(b.outcome))}, {"sub_kind", b.sub_kind}, {"message", b.message}});
    return j;
  }
  j["timing"] = "judge_clock";
  write_timings(j, b);
  j.update({{"sets", b.sets},
            {"sets_per_window", b.sets_per_window},
            {"verified_batches", b.verified_batches},
            {"round_trip_ms", b.round_trip_ms},
            {"lead_in_ms", b.lead_in_ms},
            {"gpu_base_ms", b.gpu_base_ms},
            {"lead_in_length_ms", b.lead_in_length_ms},
            {"lead_in_preempted", b.lead_in_preempted},
            {"lead_in_max_gap_us", b.lead_in_max_gap_us},
            {"host_reported", b.host_reported_ms},
            {"judge_side", b.judge_side},
            {"phases", b.phases_ms},
            {"speed_of_light_ms", b.speed_of_light_ms},
            {"peak_bytes_per_s", b.peak_bytes_per_s},
            {"launch_floor_ms", b.launch_floor_ms},
            {"flags", b.flags},
            {"bench_ms", b.bench_ms}});
  if (!b.timing_anomaly.empty())
    j.update({{"timing_anomaly", b.timing_anomaly}, {"timing_anomaly_kind", b.timing_anomaly_kind}});
  if (!b.timing_unstable.empty()) j["timing_unstable"] = b.timing_unstable;
  return j;
}

json encode(const PeaksReply& p) {
  return {{"ok", true},
          {"device", p.device},
          {"dram_bytes_per_s", p.dram_bytes_per_s},
          {"flops_per_s", p.flops_per_s},
          {"method", p.method}};
}

json encode(const PrewarmReply& p) {
  return {{"ok", true}, {"started", p.started}};
}

json encode(const ProfileSetupReply& p) {
  return {{"ok", true}, {"candidate", p.candidate}, {"reference", p.reference}};
}

json encode(const TritonBenchReply& t) {
  return {{"ok", true}, {"ms", t.ms}};
}

template <class R>
Expected<R> decode_reply(const json& j) {
  const std::string name = name_of(static_cast<const R*>(nullptr));
  if (!j.is_object()) return protocol_failure(name + ": not a JSON object but " + j.type_name());
  Reader r(j, name);
  bool ok = false;
  r.required("ok", ok);
  if (!r.ok()) return protocol_failure(r.error());
  if (!ok) return error_of(j, name);
  R out;
  read(r, out);
  if (!r.ok()) return protocol_failure(r.error());
  return out;
}

template Expected<HelloReply> decode_reply<HelloReply>(const json&);
template Expected<LoadReply> decode_reply<LoadReply>(const json&);
template Expected<ReferenceReply> decode_reply<ReferenceReply>(const json&);
template Expected<CheckReply> decode_reply<CheckReply>(const json&);
template Expected<BenchReply> decode_reply<BenchReply>(const json&);
template Expected<PeaksReply> decode_reply<PeaksReply>(const json&);
template Expected<PrewarmReply> decode_reply<PrewarmReply>(const json&);
template Expected<ProfileSetupReply> decode_reply<ProfileSetupReply>(const json&);
template Expected<TritonBenchReply> decode_reply<TritonBenchReply>(const json&);

std::optional<ErrorReply> error_reply(const json& j) {
  if (!j.is_object() || !j.contains("ok") || !j["ok"].is_boolean() || j["ok"].get<bool>())
    return std::nullopt;
  Reader r(j, "error reply");
  std::string error, message;
  r.required("error", error);
  r.optional("message", message);
  const auto e = judge_error_from_string(error);
  if (!r.ok() || !e) return std::nullopt;
  return ErrorReply{*e, message};
}

json ready_line() {
  return {{"ok", true}, {"ready", true}};
}

bool is_ready_line(const json& j) {
  return j.is_object() && j.contains("ready") && j["ready"].is_boolean() && j["ready"].get<bool>();
}

}  // namespace protocol
}  // namespace kforge::backends
