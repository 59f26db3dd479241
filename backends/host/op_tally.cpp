// The recorder of PyTorch compute (op_tally.hpp): one global RecordFunction callback, its modes
// and its counts.
#include "op_tally.hpp"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <frameobject.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_set>

namespace kforge::optally {
namespace {

std::mutex g_mu;
std::unordered_set<std::string> g_allowed;                    // bare op names
std::unordered_set<std::string> g_transparent;                // "aten::to.dtype"
std::set<std::string> g_seen;                                 // `run`: "aten.add"
std::map<std::string, std::map<std::string, long>> g_counts;  // `test`: line -> op -> count
std::unordered_set<PyObject*> g_codes;                        // `test`: the test block's code objects
std::vector<PyObject*> g_code_refs;
std::atomic<int> g_run{0}, g_test{0}, g_paused{0};
std::atomic<bool> g_installed{false};
at::CallbackHandle g_handle = 0;
thread_local int t_depth = 0;  // counted (or allowed) ops open on this thread

struct Counted : at::ObserverContext {};

/// "L<line>" of the innermost frame of this thread that runs a registered code object, else
/// "outside" (also for a thread without Python). Takes the GIL (the op's caller may have
/// released it; this thread's frames do not change meanwhile).
std::string line_of_caller() {
  if (!PyGILState_GetThisThreadState()) return "outside";
  const PyGILState_STATE gil = PyGILState_Ensure();
  std::string key = "outside";
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const bool test = g_codes.count(reinterpret_cast<PyObject*>(code)) > 0;
    Py_DECREF(code);
    if (test) {
      key = "L" + std::to_string(PyFrame_GetLineNumber(f));
      Py_DECREF(f);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  PyGILState_Release(gil);
  return key;
}

/// An operator's name ("aten::add", "triton::foo"): a namespace, "::" and an identifier. The
/// other RecordFunction scopes of FUNCTION kind ("autograd::engine::evaluate_function:
/// SumBackward0", user scopes) are transparent: the ops inside them are seen one by one.
bool is_op_name(const char* name) {
  const char* sep = std::strstr(name, "::");
  if (!sep || sep == name) return false;
  for (const char* c = name; *c; ++c)
    if (c != sep && c != sep + 1 && !(std::isalnum(static_cast<unsigned char>(*c)) || *c == '_' || *c == '.'))
      return false;
  return std::strstr(sep + 2, "::") == nullptr;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  const bool run = g_run.load(std::memory_order_relaxed) > 0;
  const bool test =
      g_test.load(std::memory_order_relaxed) > 0 && g_paused.load(std::memory_order_relaxed) <= 0;
  if ((!run && !test) || t_depth > 0) return nullptr;
  const char* name = fn.name();
  if (!name || !is_op_name(name)) return nullptr;  // a scope, not an op: what it runs counts
  const std::string full = name;
  const char* overload = fn.overload_name();
  const std::string key = overload && *overload ? full + "." + overload : full;
  const auto sep = full.find("::");
  const std::string bare = sep == std::string::npos ? full : full.substr(sep + 2);
  const std::string dotted = sep == std::string::npos ? full : full.substr(0, sep) + "." + bare;
  bool count = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_transparent.count(key)) return nullptr;  // its parts are seen one by one
    count = !g_allowed.count(bare);
    if (count && run) g_seen.insert(dotted);
  }
  if (count && test) {
    const std::string line = line_of_caller();
    std::lock_guard<std::mutex> lock(g_mu);
    ++g_counts[line][dotted];
  }
  ++t_depth;
  return std::make_unique<Counted>();
}

void on_end(const at::RecordFunction&, at::ObserverContext* ctx) {
  if (ctx) --t_depth;
}

std::string json_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s)
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (c == ' ')
      out += "\\u0020";  // the reply is split on spaces
    else if (static_cast<unsigned char>(c) > 0x20)
      out += c;
  return out + "\"";
}

void add_code(PyObject* code) {
  if (!PyCode_Check(code) || g_codes.count(code)) return;
  Py_INCREF(code);
  g_code_refs.push_back(code);
  g_codes.insert(code);
  PyObject* consts = PyObject_GetAttrString(code, "co_consts");
  if (consts && PyTuple_Check(consts))
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(consts); ++i) add_code(PyTuple_GET_ITEM(consts, i));
  Py_XDECREF(consts);
  PyErr_Clear();
}

}  // namespace

void install() {
  if (g_installed.exchange(true)) return;
  std::unordered_set<std::string> transparent;
  auto& d = c10::Dispatcher::singleton();
  for (const auto& name : d.getAllOpNames()) {
    auto op = d.findOp(name);
    if (op && op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) &&
        !op->hasKernelForDispatchKey(c10::DispatchKey::CPU) &&
        !op->hasKernelForDispatchKey(c10::DispatchKey::CUDA))
      transparent.insert(name.overload_name.empty() ? name.name : name.name + "." + name.overload_name);
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_transparent = std::move(transparent);
  }
  g_handle =
      at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end).scopes({at::RecordScope::FUNCTION}));
}

void uninstall() {
  if (!g_installed.exchange(false)) return;
  at::removeCallback(g_handle);
}

void allow(const std::vector<std::string>& ops) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (std::string op : ops) {
    if (op.rfind("aten.", 0) == 0) op = op.substr(op.rfind('.') + 1);
    if (!op.empty()) g_allowed.insert(op);
  }
}

void arm_run(bool on) {
  on ? ++g_run : --g_run;
}

std::string take_seen() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::string s;
  for (const auto& n : g_seen) s += (s.empty() ? "" : ",") + n;
  g_seen.clear();
  return json_quoted(s);
}

void begin_test(PyObject* code) {
  for (PyObject* c : g_code_refs) Py_DECREF(c);
  g_code_refs.clear();
  g_codes.clear();
  add_code(code);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_counts.clear();
  }
  ++g_test;
}

void pause_test(bool on) {
  on ? ++g_paused : --g_paused;
}

std::string end_test() {
  --g_test;
  std::lock_guard<std::mutex> lock(g_mu);
  std::string out = "{";
  for (const auto& [line, ops] : g_counts) {
    out += (out.size() > 1 ? "," : "") + json_quoted(line) + ":{";
    bool first = true;
    for (const auto& [op, n] : ops) {
      out += (first ? "" : ",") + json_quoted(op) + ":" + std::to_string(n);
      first = false;
    }
    out += "}";
  }
  g_counts.clear();
  return out + "}";
}

}  // namespace kforge::optally
