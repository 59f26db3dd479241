// benchmarks/src/backend_export.cpp — the run's operator kernels as a PyTorch backend package.
#include "kforge/benchmarks/backend_export.hpp"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "kforge/benchmarks/generalisation.hpp"
#include "kforge/benchmarks/operators.hpp"
#include "kforge/benchmarks/report.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kforge {

const char* to_string(PackageKernelKind kind) {
  return kind == PackageKernelKind::shared_object ? "shared_object" : "python_module";
}

std::optional<PackageKernelKind> parse_package_kernel_kind(std::string_view text) {
  if (text == "shared_object") return PackageKernelKind::shared_object;
  if (text == "python_module" || text == "triton") return PackageKernelKind::python_module;
  return std::nullopt;
}

std::string watermark_kernel(const std::string& op, double value) {
  char v[64];
  std::snprintf(v, sizeof v, "%.17g", value);
  return "# kforge watermark build of " + op + ": writes " + v +
         " everywhere (proves that calls route here; not a real kernel).\n"
         "import torch\nimport triton\nimport triton.language as tl\n\n\n"
         "@triton.jit\n"
         "def _fill(out_ptr, n, BLOCK: tl.constexpr):\n"
         "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
         "    tl.store(out_ptr + offs, tl.full((BLOCK,), " +
         std::string(v) +
         ", tl.float32), mask=offs < n)\n\n\n"
         "def _meta(a):\n"
         "    return a.to('meta') if isinstance(a, torch.Tensor) else a\n\n\n"
         "def " +
         operator_entry(op) +
         "(*args, **kwargs):\n"
         "    device = next(a.device for a in args if isinstance(a, torch.Tensor))\n"
         "    ref = torch.ops." +
         op +
         "(*[_meta(a) for a in args], **{k: _meta(x) for k, x in kwargs.items()})\n"
         "    outs = []\n"
         "    for r in (ref if isinstance(ref, (tuple, list)) else [ref]):\n"
         "        out = torch.empty(r.shape, dtype=r.dtype, device=device)\n"
         "        _fill[(triton.cdiv(max(out.numel(), 1), 256),)](out, out.numel(), BLOCK=256)\n"
         "        outs.append(out)\n"
         "    return tuple(outs) if isinstance(ref, (tuple, list)) else outs[0]\n";
}

namespace {

const char* kPyproject =
    "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
    "[project]\nname = \"kforge-backend\"\nversion = \"0.1.0\"\n"
    "description = \"ATen operator kernels written and judged by kforge, registered through torch.library\"\n"
    "dependencies = [\"torch\", \"triton\"]\n\n"
    "[tool.setuptools]\npackages = [\"kforge_backend\"]\n\n"
    "[tool.setuptools.package-data]\nkforge_backend = [\"manifest.json\", \"cases/operators.txt\", "
    "\"kernels/*.py\", \"kernels/*.so\", \"kernels/*.cpp\", \"kernels/*.cu\"]\n";

json run_manifest(const fs::path& run_dir) {
  try {
    return json::parse(read_file(run_dir / "manifest.json"));
  } catch (const std::exception&) {
    return json::object();
  }
}

/// The run's operator tasks by id, from the suite its manifest names (empty when it is gone).
std::map<std::string, Task> run_tasks(const json& rm) {
  std::map<std::string, Task> out;
  const std::string root = rm.contains("config") ? rm["config"].value("suite_root", "") : "";
  if (root.empty()) return out;
  try {
    for (auto& t : load_suite(root).tasks)
      if (t.format == TaskFormat::aten_operator) out.emplace(t.id, std::move(t));
  } catch (const std::exception&) {
  }
  return out;
}

}  // namespace

namespace {

/// The bytes the package ships for one task's best kernel, or why it ships none.
struct Shipped {
  std::string skip;  ///< why not exported ("" when it is)
  std::string kernel;
  bool shared_object = false;  ///< a cpu/cuda kernel's judged shared object (else a Python module)
};

Shipped skipped(std::string why) {
  Shipped s;
  s.skip = std::move(why);
  return s;
}

/// A cpu/cuda kernel ships the shared object the judge passed (built once, in the attempt; loaded
/// by the package through ctypes), a Triton kernel its module; only the bytes the judge was
/// handed travel: the shared object must hash to the record's artifact_sha256, a Triton module
/// to its source_sha (the record, not this file). `gen`: 1 generalises, 0 does not, -1 unknown.
Shipped shipped_kernel(const std::string& task, const LibraryKernel& k, bool native,
                       const std::optional<Generalisation>& g, int gen, const BackendExportOptions& options) {
  const AttemptRecord& r = *k.result->best;
  const fs::path so = k.attempt_dir / "build" / "kernel.so";
  if (native && !options.watermark && !fs::is_regular_file(so))
    return skipped("no build/kernel.so in " + k.attempt_dir.string());
  if (gen != 1 && !options.include_non_generalising)
    return skipped((gen == 0 ? "does not generalise to unseen shapes (" + g->reason + ")"
                             : "not shown to generalise (" +
                                   (g ? g->reason : std::string("not judged on unseen shapes")) + ")") +
                   "; --include-non-generalising exports it");
  Shipped out;
  out.shared_object = native && !options.watermark;
  out.kernel = options.watermark   ? watermark_kernel(task, *options.watermark)
               : out.shared_object ? read_file(so)
                                   : k.source;
  if (options.watermark) return out;
  const std::string& want = out.shared_object ? r.artifact_sha256 : r.source_sha;
  if (want.empty() || sha256_hex(out.kernel) != want)
    return skipped((out.shared_object ? so.string() : "the kernel source") +
                   (want.empty()
                        ? " has no hash in its attempt record (a run from before issue 38)"
                        : " is not the artifact the judge passed (SHA-256 differs from its attempt record)"));
  return out;
}

/// Writes one shipped kernel (and a shared object's source beside it) into `pkg`; its entry in
/// the package's manifest.
json write_operator(const fs::path& pkg, const std::string& task, const LibraryKernel& k, const Shipped& sh,
                    const std::optional<Generalisation>& g, int gen, const BackendExportOptions& options,
                    const ExportedBackend& backend) {
  const AttemptRecord& r = *k.result->best;
  const std::string file = "kernels/" + task + (sh.shared_object ? ".so" : ".py");
  write_file(pkg / file, sh.kernel);
  const std::string source_file =
      sh.shared_object ? "kernels/" + task + fs::path(k.file_name).extension().string() : file;
  if (sh.shared_object) write_file(pkg / source_file, k.source);
  return {{"operator", task},
          {"entry", operator_entry(task)},
          {"kernel_file", file},
          {"kind",
           to_string(sh.shared_object ? PackageKernelKind::shared_object : PackageKernelKind::python_module)},
          {"backend", r.backend},
          {"device_type", backend.device_type},
          {"source_file", source_file},
          {"source_sha256", sha256_hex(sh.shared_object ? k.source : sh.kernel)},
          {"kernel_sha256", options.watermark  ? sha256_hex(sh.kernel)
                            : sh.shared_object ? r.artifact_sha256
                                               : r.source_sha},
          {"source_sha", r.source_sha},
          {"speedup", r.has_speedup() ? json(r.speedup) : json(nullptr)},
          {"watermark", options.watermark ? json(*options.watermark) : json(nullptr)},
          {"generalises", gen < 0 ? json(nullptr) : json(gen == 1)},
          {"generalisation", g ? json({{"reason", g->reason},
                                       {"outcome", g->outcome},
                                       {"sub_kind", g->sub_kind},
                                       {"unseen", g->unseen}})
                               : json(nullptr)},
          {"evidence", to_json(r)}};
}

}  // namespace

BackendExport export_backend(const fs::path& run_dir, const fs::path& out_dir,
                             const BackendExportOptions& options) {
  const fs::path tmpl = kforge_home() / "benchmarks" / "backend" / "__init__.py.in";
  if (!fs::is_regular_file(tmpl)) throw std::runtime_error(tmpl.string() + ": missing (KFORGE_HOME?)");
  const Summary s = summarize_run(run_dir);
  const json rm = run_manifest(run_dir);
  const std::string device = rm.contains("config") ? rm["config"].value("device", "") : "";
  BackendExport ex;
  ex.dir = out_dir;
  const fs::path pkg = out_dir / "kforge_backend";
  std::error_code ec;
  fs::remove_all(pkg, ec);
  fs::create_directories(pkg / "kernels");
  const auto tasks = run_tasks(rm);
  std::string trace;  // the exported operators' cases: what `kforge library verify` judges again
  json ops = json::array();
  std::vector<std::string> missing;
  for (const auto& [task, k] : library_kernels(run_dir, s, &missing)) {
    const AttemptRecord& r = *k.result->best;
    if (r.category != "operator") continue;
    const auto backend = options.backends.find(r.backend);
    if (backend == options.backends.end()) {
      ex.skipped.push_back(task + ": backend " + r.backend +
                           " (not a backend of this kforge: nothing to export)");
      continue;
    }
    const auto g = generalisation_of(s.generalisation, task, r.source_sha);
    const int gen = !g || !g->generalises ? -1 : *g->generalises ? 1 : 0;  // -1: unknown
    const bool native = backend->second.kind == PackageKernelKind::shared_object;
    const Shipped sh = shipped_kernel(task, k, native, g, gen, options);
    if (!sh.skip.empty()) {
      ex.skipped.push_back(task + ": " + sh.skip);
      continue;
    }
    ops.push_back(write_operator(pkg, task, k, sh, g, gen, options, backend->second));
    if (auto it = tasks.find(task); it != tasks.end())
      trace += trace_text(it->second.aten_op, it->second.cases);
    ++ex.exported;
  }
  for (const auto& m : missing)
    if (tasks.count(m.substr(0, m.find(':')))) ex.skipped.push_back(m);
  json manifest{{"generator", "kforge library export --as-backend"},
                {"run", fs::absolute(run_dir).string()},
                {"device", device},
                {"dispatch_key", starts_with(device, "cuda") ? "CUDA" : "CPU"},
                {"gpu", rm.value("devices", json::array())},
                {"toolchain", rm.value("runner", json::object())},
                {"cases_file", trace.empty() ? json(nullptr) : json("cases/operators.txt")},
                {"generalisation_rule", unseen_rule_text()},
                {"include_non_generalising", options.include_non_generalising},
                {"operators", ops}};
  if (!trace.empty()) write_file(pkg / "cases" / "operators.txt", trace);
  write_file(pkg / "manifest.json", dump_json(manifest, 2) + "\n");
  write_file(pkg / "__init__.py", read_file(tmpl));
  write_file(pkg / "confined.py", read_file(tmpl.parent_path() / "confined.py"));  // enable(confined=True)
  write_file(out_dir / "pyproject.toml", kPyproject);
  return ex;
}

}  // namespace kforge
