// libkforge_pyseal.so: the Triton candidate host's protocol loop, its recorder of PyTorch
// compute and the seal of its interpreter, in native code that the candidate's Python cannot
// patch (backends/triton/host.py loads it with ctypes.PyDLL, before the candidate exists, and
// hands it the host object; kf_seal_serve then never returns until `quit`).
//
// - The recorder is a global at::RecordFunction callback: every ATen op that enters the
//   dispatcher while the candidate runs (armed), at the outermost level the way a
//   TorchDispatchMode sees it (CompositeImplicitAutograd ops are transparent: their parts count;
//   ops nested inside a counted op do not). An op whose name is outside the allow-list is a
//   torch_fallback. Its state (arming, allow-list, what it saw) lives here only.
// - Every reply carries the judge's key (the first line the judge sends, kept here only): a
//   line the candidate writes on the channel itself lacks it and the judge drops it. A `run` or
//   `testblock` reply that claims success while the recorder saw compute becomes a
//   torch_fallback here, whatever the Python side said.
// - A native audit hook (PEP 578; hooks cannot be removed) seals the interpreter from the
//   moment the candidate's module code is executed: no ctypes, no gc walks, no trace or profile
//   functions, no other threads' frames, no /proc files of a process. Its own frames stay
//   reachable (PyTorch needs sys._getframe), and through them the host's Python objects: they
//   decide nothing the judge hears (the reply and the recorder of `run` are here). The PyTorch bindings that
//   switch RecordFunction off or clear its callbacks are deleted by host.py before serve (everywhere gc finds
//   them).
// Single-threaded by contract: the host runs one request at a time on its main thread; the
// recorder's counters are atomic only because RecordFunction may fire on torch's own threads.
#include <ATen/record_function.h>
#include <Python.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>

namespace {

// --- the recorder -------------------------------------------------------------------------

std::atomic<int> g_armed{0};
std::mutex g_mu;
std::unordered_set<std::string> g_allowed;      // bare op names ("empty", "copy_")
std::unordered_set<std::string> g_transparent;  // "aten::to.dtype": CompositeImplicitAutograd only
std::set<std::string> g_seen;                   // "aten.add": compute outside the allow-list
thread_local int t_depth = 0;                   // counted ops open on this thread

struct Counted : at::ObserverContext {};

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (g_armed.load(std::memory_order_relaxed) <= 0 || t_depth > 0) return nullptr;
  const char* name = fn.name();
  if (!name) return nullptr;
  std::string full = name;
  const char* overload = fn.overload_name();
  std::string key = overload && *overload ? full + "." + overload : full;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_transparent.count(key)) return nullptr;  // its parts are seen one by one
    const auto sep = full.find("::");
    const std::string bare = sep == std::string::npos ? full : full.substr(sep + 2);
    if (!g_allowed.count(bare))
      g_seen.insert(sep == std::string::npos ? full : full.substr(0, sep) + "." + bare);
  }
  ++t_depth;
  return std::make_unique<Counted>();
}

void on_end(const at::RecordFunction&, at::ObserverContext* ctx) {
  if (ctx) --t_depth;
}

/// The ops seen since the last take, as the JSON string host.py's replies carry ("a,b").
std::string take_seen() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::string s;
  for (const auto& n : g_seen) s += (s.empty() ? "" : ",") + n;
  g_seen.clear();
  std::string json = "\"";
  for (char c : s) json += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return json + "\"";
}

// --- the seal -------------------------------------------------------------------------------

std::atomic<bool> g_sealed{false};
std::string g_artifact;  // the candidate's file: executing its code seals the interpreter

bool str_arg(PyObject* args, Py_ssize_t i, std::string* out) {
  if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) <= i) return false;
  PyObject* o = PyTuple_GET_ITEM(args, i);
  if (PyUnicode_Check(o)) {
    const char* s = PyUnicode_AsUTF8(o);
    if (!s) {
      PyErr_Clear();
      return false;
    }
    *out = s;
    return true;
  }
  if (PyBytes_Check(o)) {
    *out = PyBytes_AS_STRING(o);
    return true;
  }
  return false;
}

bool proc_path(const std::string& p) {
  return p.rfind("/proc/", 0) == 0 && p != "/proc/cpuinfo" && p != "/proc/meminfo" && p != "/proc/stat" &&
         p.rfind("/proc/sys/", 0) != 0;
}

int deny(PyObject* type, const char* what) {
  PyErr_Format(type, "kforge: %s is not available to a candidate", what);
  return -1;
}

/// Latches the seal when the candidate's module code is executed; afterwards refuses every
/// route from Python to native memory (ctypes, /proc/<pid>/mem and maps, the _test modules),
/// gc's object walks, trace and profile functions and other threads' frames.
int audit(const char* event, PyObject* args, void*) {
  if (!g_sealed.load(std::memory_order_relaxed)) {
    if (std::strcmp(event, "exec") == 0 && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 &&
        PyCode_Check(PyTuple_GET_ITEM(args, 0))) {
      PyObject* fn = PyObject_GetAttrString(PyTuple_GET_ITEM(args, 0), "co_filename");
      const char* s = fn && PyUnicode_Check(fn) ? PyUnicode_AsUTF8(fn) : nullptr;
      if (s && g_artifact == s) g_sealed = true;
      Py_XDECREF(fn);
      PyErr_Clear();
    }
    return 0;
  }
  if (std::strncmp(event, "ctypes.", 7) == 0) return deny(PyExc_RuntimeError, "ctypes");
  // Frames stay reachable (sys._getframe: PyTorch itself needs it, torch.manual_seed among
  // others), and through them the host's Python objects; the trace and profile functions that
  // would run code inside the host's own frames, and other threads' frames, do not.
  if (std::strcmp(event, "sys._current_frames") == 0 || std::strcmp(event, "sys._current_exceptions") == 0)
    return deny(PyExc_RuntimeError, event);
  if (std::strcmp(event, "sys.settrace") == 0 || std::strcmp(event, "sys.setprofile") == 0 ||
      std::strncmp(event, "sys.monitoring.", 15) == 0)
    return deny(PyExc_RuntimeError, event);
  if (std::strcmp(event, "gc.get_objects") == 0 || std::strcmp(event, "gc.get_referrers") == 0 ||
      std::strcmp(event, "gc.get_referents") == 0)
    return deny(PyExc_RuntimeError, event);
  if (std::strcmp(event, "open") == 0) {
    std::string path;
    if (str_arg(args, 0, &path) && proc_path(path)) return deny(PyExc_PermissionError, "/proc");
    return 0;
  }
  if (std::strcmp(event, "import") == 0) {
    std::string name;
    if (str_arg(args, 0, &name) && (name.rfind("_test", 0) == 0 || name.rfind("_xxsub", 0) == 0))
      return deny(PyExc_ImportError, "this module");
  }
  return 0;
}

// --- services the host's Python calls (harmless in anyone's hands) --------------------------

/// recorded(fn) -> a callable that runs fn armed: a testblock's calls of the candidate's own
/// functions (arming more is all a caller can do with it).
PyObject* armed_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  ++g_armed;
  PyObject* r = PyObject_Call(PyTuple_GET_ITEM(self, 0), args, kwargs);
  --g_armed;
  return r;
}
PyMethodDef g_armed_def = {"kforge_recorded",
                           reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(armed_call)),
                           METH_VARARGS | METH_KEYWORDS, nullptr};

PyObject* recorded(PyObject*, PyObject* fn) {
  PyObject* holder = PyTuple_Pack(1, fn);
  if (!holder) return nullptr;
  PyObject* f = PyCFunction_New(&g_armed_def, holder);
  Py_DECREF(holder);
  return f;
}
PyMethodDef g_recorded_def = {"recorded", recorded, METH_O, nullptr};

PyObject* g_format_only = nullptr;  // traceback.format_exception_only, taken before the seal
PyObject* g_getline = nullptr;      // linecache.getline (host.py caches the candidate's source there)

std::string attr_text(PyObject* o, const char* name) {
  PyObject* v = PyObject_GetAttrString(o, name);
  std::string s;
  if (v && PyUnicode_Check(v))
    if (const char* c = PyUnicode_AsUTF8(v)) s = c;
  Py_XDECREF(v);
  PyErr_Clear();
  return s;
}

/// One traceback entry as the traceback module writes it: file, line, function, source line.
/// The frame comes from the traceback's C struct, never through Python (which the seal refuses).
std::string tb_entry(PyObject* tb) {
  PyFrameObject* frame = reinterpret_cast<PyTracebackObject*>(tb)->tb_frame;
  PyObject* ln = PyObject_GetAttrString(tb, "tb_lineno");
  const long lineno = ln ? PyLong_AsLong(ln) : -1;
  Py_XDECREF(ln);
  PyErr_Clear();
  PyCodeObject* code = frame ? PyFrame_GetCode(frame) : nullptr;
  const std::string file = code ? attr_text(reinterpret_cast<PyObject*>(code), "co_filename") : "?";
  const std::string func = code ? attr_text(reinterpret_cast<PyObject*>(code), "co_name") : "?";
  Py_XDECREF(code);
  std::string out = "  File \"" + file + "\", line " + std::to_string(lineno) + ", in " + func + "\n";
  PyObject* src = PyObject_CallFunction(g_getline, "sl", file.c_str(), lineno);
  if (src && PyUnicode_Check(src)) {
    std::string line = PyUnicode_AsUTF8(src) ? PyUnicode_AsUTF8(src) : "";
    const auto b = line.find_first_not_of(" \t"), e = line.find_last_not_of(" \t\r\n");
    if (b != std::string::npos && e != std::string::npos) out += "    " + line.substr(b, e - b + 1) + "\n";
  }
  Py_XDECREF(src);
  PyErr_Clear();
  return out;
}

/// format_exc() -> the handled exception's traceback as traceback.format_exc() writes it,
/// read natively (the sealed interpreter refuses frames to Python, the host's own included).
PyObject* format_exc(PyObject*, PyObject*) {
  PyObject* exc = PyErr_GetHandledException();
  if (!exc || exc == Py_None) {
    Py_XDECREF(exc);
    return PyUnicode_FromString("NoneType: None\n");
  }
  std::string text;
  PyObject* tb = PyException_GetTraceback(exc);
  if (tb && PyTraceBack_Check(tb)) {
    text = "Traceback (most recent call last):\n";
    for (PyObject* t = tb; t && PyTraceBack_Check(t);
         t = reinterpret_cast<PyObject*>(reinterpret_cast<PyTracebackObject*>(t)->tb_next))
      text += tb_entry(t);
  }
  Py_XDECREF(tb);
  PyObject* only =
      PyObject_CallFunctionObjArgs(g_format_only, reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc, nullptr);
  if (only && PyList_Check(only))
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(only); ++i)
      if (const char* s = PyUnicode_AsUTF8(PyList_GET_ITEM(only, i))) text += s;
  PyErr_Clear();
  Py_XDECREF(only);
  Py_DECREF(exc);
  return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
}
PyMethodDef g_format_def = {"format_exc", format_exc, METH_NOARGS, nullptr};

// --- the protocol loop ----------------------------------------------------------------------

struct Channel {
  int fd;
  std::string buf;
  bool read_line(std::string* line) {
    for (;;) {
      if (auto nl = buf.find('\n'); nl != std::string::npos) {
        *line = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        return true;
      }
      char tmp[65536];
      ssize_t n = ::read(fd, tmp, sizeof tmp);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buf.append(tmp, static_cast<std::size_t>(n));
    }
  }
  void write_line(const std::string& s) {
    std::string data = s + "\n";
    std::size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::write(fd, data.data() + off, data.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      off += static_cast<std::size_t>(n);
    }
  }
};

std::string word(const std::string& line, int i) {
  std::size_t pos = 0;
  for (int k = 0;; ++k) {
    pos = line.find_first_not_of(' ', pos);
    if (pos == std::string::npos) return "";
    std::size_t end = line.find(' ', pos);
    if (k == i) return line.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (end == std::string::npos) return "";
    pos = end;
  }
}

/// `allow a,b c`: the task's or run's extra allowed ops ("aten.add" or "add": the bare name).
void allow(const std::string& line) {
  std::string list =
      line.substr(std::min(line.size(), line.find(' ') == std::string::npos ? line.size() : line.find(' ')));
  std::replace(list.begin(), list.end(), ' ', ',');
  std::lock_guard<std::mutex> lock(g_mu);
  std::size_t start = 0;
  while (start < list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string op = list.substr(start, end - start);
    if (op.rfind("aten.", 0) == 0) op = op.substr(op.rfind('.') + 1);
    if (!op.empty()) g_allowed.insert(op);
    start = end + 1;
  }
}

/// The reply the judge gets: Python's, unless the candidate's call claims success and the
/// recorder saw compute (a python exception stays one).
std::string verdict(const std::string& cmd, const std::string& seq, const std::string& reply,
                    const std::string& seen) {
  if (seen == "\"\"") return reply;
  if (cmd == "run" && reply.rfind("done " + seq + " 1 ", 0) != 0)
    return "done " + seq + " 3 torch_fallback " + seen;
  if (cmd == "testblock" && reply.rfind("tested " + seq + " err python ", 0) != 0)
    return "tested " + seq + " err torch_fallback " + seen;
  return reply;
}

std::string call_handler(PyObject* handle, const std::string& line) {
  PyObject* r = PyObject_CallFunction(handle, "s", line.c_str());
  std::string out;
  if (r && PyUnicode_Check(r)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(r, &n);
    if (s) out.assign(s, static_cast<std::size_t>(n));
  }
  if (out.empty() || out.find('\n') != std::string::npos) out = "err protocol the host's handler failed";
  PyErr_Clear();
  Py_XDECREF(r);
  return out;
}

bool set_list(PyObject* config, const char* key, std::unordered_set<std::string>* into) {
  PyObject* list = PyDict_GetItemString(config, key);
  if (!list || !PyList_Check(list)) return false;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i)
    if (const char* s = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i))) into->insert(s);
  return true;
}

}  // namespace

extern "C" {

/// Serves the judge on `channel` until `quit` or end of file; 0 then, 2 on a bad config or a
/// first line that is not `key <hex>`. `host` has handle(line) -> reply (str); it receives the
/// attributes `recorded` and `format_exc`. `config`: {"allowed": [op], "transparent":
/// ["aten::op.overload"], "artifact": path}. Call with the GIL held (ctypes.PyDLL).
__attribute__((visibility("default"))) int kf_seal_serve(PyObject* host, PyObject* config, int channel) {
  if (!PyDict_Check(config) || !set_list(config, "allowed", &g_allowed) ||
      !set_list(config, "transparent", &g_transparent))
    return 2;
  PyObject* artifact = PyDict_GetItemString(config, "artifact");
  if (!artifact || !PyUnicode_Check(artifact)) return 2;
  g_artifact = PyUnicode_AsUTF8(artifact);
  PyObject* tb_mod = PyImport_ImportModule("traceback");
  PyObject* lc_mod = PyImport_ImportModule("linecache");
  if (!tb_mod || !lc_mod) return 2;
  g_format_only = PyObject_GetAttrString(tb_mod, "format_exception_only");
  g_getline = PyObject_GetAttrString(lc_mod, "getline");
  PyObject* handle = PyObject_GetAttrString(host, "handle");
  PyObject* rec = PyCFunction_New(&g_recorded_def, nullptr);
  PyObject* fmt = PyCFunction_New(&g_format_def, nullptr);
  if (!g_format_only || !g_getline || !handle || !rec || !fmt ||
      PyObject_SetAttrString(host, "recorded", rec) || PyObject_SetAttrString(host, "format_exc", fmt))
    return 2;
  at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end).scopes({at::RecordScope::FUNCTION}));
  if (PySys_AddAuditHook(audit, nullptr) != 0) return 2;
  Channel ch{channel, {}};
  std::string line, key;
  if (!ch.read_line(&line) || word(line, 0) != "key" || (key = word(line, 1)).size() < 32) return 2;
  std::fill(line.begin(), line.end(), '\0');
  for (;;) {
    if (!ch.read_line(&line) || line == "quit") return 0;
    const std::string cmd = word(line, 0), seq = word(line, 1);
    std::string reply;
    if (cmd == "allow") {
      allow(line);
      reply = call_handler(handle, line);
    } else if (cmd == "run") {
      take_seen();
      ++g_armed;
      reply = call_handler(handle, line);
      --g_armed;
      reply = verdict(cmd, seq, reply, take_seen());
    } else if (cmd == "testblock") {
      take_seen();  // armed by the calls of the candidate's functions (recorded) and the store
      reply = call_handler(handle, line);
      reply = verdict(cmd, seq, reply, take_seen());
    } else {
      reply = call_handler(handle, line);
    }
    ch.write_line(key + " " + reply);
  }
}

}  // extern "C"
