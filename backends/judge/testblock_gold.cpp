// The gold's side of a TritonBench test block (testblock_gold.hpp): the reference's results
// under each seed, run twice for gold agreement (testblock.py), and what this worker learned
// of each task's gold.
#include "testblock_gold.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "../host/op_tally.hpp"

namespace kforge::runner {

py::object testblock_module(const JudgeContext& ctx) {
  auto util = py::module_::import("importlib.util");
  py::object spec = util.attr("spec_from_file_location")("kforge_testblock", testblock_path(ctx));
  py::object module = util.attr("module_from_spec")(spec);
  spec.attr("loader").attr("exec_module")(module);
  return module;
}

namespace {

/// The exception the reference's deadline raises in the gold: a BaseException, so that a test
/// block's `except Exception` (TritonBench's blocks record `f"failed: {e}"`) does not swallow it.
PyObject* reference_deadline_type() {
  static PyObject* type = PyErr_NewException("kforge.ReferenceDeadline", PyExc_BaseException, nullptr);
  return type;
}

Leaves reference_leaves(py::object& tb, const protocol::TestblockRequest& req, int64_t seed,
                        const std::string& device, bool twice, bool fresh, bool stubs) {
  // The judge's recorder, the candidate host's own code (op_tally.cpp), armed only for the test
  // block: removed after it, so that no later timing pays for a callback.
  optally::install();
  struct Uninstall {
    ~Uninstall() { optally::uninstall(); }
  } uninstall;
  py::tuple tally = py::make_tuple(py::cpp_function([](py::object code) { optally::begin_test(code.ptr()); }),
                                   py::cpp_function([](bool on) { optally::pause_test(on); }),
                                   py::cpp_function([]() { return optally::end_test(); }));
  py::tuple r = tb.attr("reference_leaves")(req.source, req.test_source, req.test_function, seed, device,
                                            req.entries, tally, twice, fresh, stubs);
  Leaves l;
  for (auto t : py::list(r[0])) l.tensors.push_back(hold(t));
  l.others = json::parse(r[1].cast<std::string>(), nullptr, false);
  for (auto m : py::list(r[2])) l.masks.push_back(m.is_none() ? HeldTensor{} : hold(m));
  l.unjudgeable = r[3].cast<std::string>();
  l.ops = r[4].cast<std::vector<std::string>>();
  l.counts = json::parse(r[5].cast<std::string>(), nullptr, false);
  l.launch = r[6].cast<std::vector<std::string>>();
  l.stubbed = r[7].cast<std::string>();
  l.fresh = fresh;
  return l;
}

/// What this worker learned of each task's gold (by everything its results depend on: the
/// request's source, test block, function, entries, and the device): true once the gold agreed
/// with itself on every element under every seed of a check (run twice), so that later checks
/// run it once per seed, as before gold agreement; false once a result was restricted, so that
/// every later check runs it twice per seed. The second run costs once per task on a worker,
/// not once per candidate, unless the gold needs it. Single-threaded, as the runner.
std::map<std::string, bool>& gold_agrees_wholly() {
  // Never destroyed, as the other state the runner keeps until it exits.
  static auto* known = new std::map<std::string, bool>;
  return *known;
}

/// Per task (gold_key), why its test block cannot tell stubbed entry points from the gold (""
/// when it can): found once per worker (testblock.py stub_verdict, issue 38 §2.4). Single-threaded.
std::map<std::string, std::string>& stub_verdicts() {
  static auto* known = new std::map<std::string, std::string>;
  return *known;
}

std::string gold_key(const protocol::TestblockRequest& req, const std::string& device) {
  return json::array({req.source, req.test_source, req.test_function, req.entries, device})
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

/// The whole traceback of a reference's exception (Python's own formatting).
std::string reference_traceback(py::error_already_set& e) {
  try {
    std::string s;
    for (auto l :
         py::list(py::module_::import("traceback").attr("format_exception")(e.type(), e.value(), e.trace())))
      s += l.cast<std::string>();
    return s;
  } catch (...) {
    return e.what();
  }
}

/// The gold's results under one seed; with `fresh`, on the block's floating literals drawn anew
/// (testblock.py fresh_literals), unless the gold raises or cannot judge on them (a literal the
/// gold needs as it is: a matrix it factorises, values it sorts by): then on the literals as
/// written, as the first seed always is. Python errors of the gold on its own literals propagate.
Leaves gold_seed(py::object& tb, const protocol::TestblockRequest& req, int64_t seed,
                 const std::string& device, bool twice, bool fresh, bool stubs) {
  if (fresh) {
    try {
      Leaves l = reference_leaves(tb, req, seed, device, twice, true, stubs);
      if (l.unjudgeable.empty()) return l;
    } catch (py::error_already_set& e) {
      if (e.matches(reference_deadline_type())) throw;
    }
  }
  return reference_leaves(tb, req, seed, device, twice, false, stubs);
}

/// Interrupts the serving thread's Python at a deadline (the reference's part of a test block):
/// from then on, every 100 ms until disarmed, it raises reference_deadline_type() there
/// (PyThreadState_SetAsyncExc, checked between bytecodes: a long native call, such as one Triton
/// compile, ends first). Constructed and destroyed on the serving thread, which holds the GIL;
/// disarming clears an exception set but not yet raised, so none reaches later code.
class ReferenceWatchdog {
 public:
  explicit ReferenceWatchdog(int64_t ms)
      : tid_(PyThread_get_thread_ident()), end_(Clock::now() + Ms(ms)), thread_([this] { watch(); }) {}
  ~ReferenceWatchdog() {
    {
      // Under the GIL: watch() tests stop_ holding it too, so nothing is raised after this.
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    PyThreadState_SetAsyncExc(tid_, nullptr);
    cv_.notify_all();
    py::gil_scoped_release release;  // watch() may be waiting for the GIL
    thread_.join();
  }
  ReferenceWatchdog(const ReferenceWatchdog&) = delete;
  ReferenceWatchdog& operator=(const ReferenceWatchdog&) = delete;

 private:
  void watch() {
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_until(l, end_, [&] { return stop_; })) return;
    while (!stop_) {
      l.unlock();  // never wait for the GIL holding mu_: the destructor takes mu_ holding the GIL
      {
        py::gil_scoped_acquire gil;
        l.lock();
        if (!stop_) PyThreadState_SetAsyncExc(tid_, reference_deadline_type());
      }
      cv_.wait_for(l, Ms(100), [&] { return stop_; });
    }
  }

  unsigned long tid_;
  Clock::time_point end_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;   ///< under mu_; set by the destructor, which holds the GIL
  std::thread thread_;  ///< last: started once the members above are
};

}  // namespace

std::optional<json> gold_results(const JudgeContext& ctx, py::object& tb,
                                 const protocol::TestblockRequest& req, const std::string& device,
                                 std::vector<Leaves>& refs, bool& twice) {
  const int64_t seed = req.seed;
  const int trials = req.trials;
  const std::string key = gold_key(req, device);
  auto known = gold_agrees_wholly().find(key);
  twice = known == gold_agrees_wholly().end() || !known->second;
  const bool stubs = !stub_verdicts().count(key);
  try {
    ReferenceWatchdog watchdog(req.reference_deadline_ms);
    for (int i = 0; i < trials; ++i)
      refs.push_back(gold_seed(tb, req, seed + i, device, twice, i > 0, stubs && i == 0));
    sync_device(ctx.device);
  } catch (py::error_already_set& e) {
    if (e.matches(reference_deadline_type()))
      return protocol::encode(protocol::ErrorReply{
          JudgeError::reference_failed,
          "the gold's test block did not finish within " + std::to_string(req.reference_deadline_ms / 1000) +
              " s (its runs under " + std::to_string(trials) + " seed(s), " +
              (twice ? "each twice for gold agreement" : "each once") +
              ", Triton's compiles and autotuning cold): the task is unusable at this limit"});
    // The task's own failure, not the candidate's: the client starts a fresh worker (the
    // reference may have left this interpreter or device unusable) and lists the task unusable.
    return protocol::encode(protocol::ErrorReply{JudgeError::reference_failed, reference_traceback(e)});
  }
  if (stubs) {
    if (stub_verdicts().size() > 1024) stub_verdicts().clear();
    stub_verdicts()[key] = refs[0].stubbed;
  }
  if (const std::string& why = stub_verdicts()[key]; !why.empty())
    return protocol::encode(protocol::ErrorReply{JudgeError::unjudgeable, "unjudgeable: " + why});
  bool whole = true;
  for (int i = 0; i < trials; ++i) {
    if (!refs[i].unjudgeable.empty())  // the gold's own two runs disagree where it cannot judge
      return protocol::encode(protocol::ErrorReply{
          JudgeError::unjudgeable, "unjudgeable: the gold's test block, seed " + std::to_string(seed + i) +
                                       ": " + refs[i].unjudgeable});
    for (const auto& m : refs[i].masks) whole = whole && !m.t.defined();
  }
  if (twice) {
    if (gold_agrees_wholly().size() > 1024) gold_agrees_wholly().clear();
    gold_agrees_wholly()[key] = whole;
  }
  return std::nullopt;
}

}  // namespace kforge::runner
