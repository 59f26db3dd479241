#include "kforge/runs/attempt_profile.hpp"

#include <cmath>

#include "kforge/runs/record_error.hpp"

namespace kforge {

using json = nlohmann::json;

bool AttemptProfile::empty() const {
  return resources.empty() && resources_note.empty() && profiler.empty() && profiler_note.empty() &&
         findings.empty() && candidate_kernels.empty() && reference_kernels.empty() && bottleneck.empty() &&
         dram_fraction == 0 && flops_fraction == 0 && t_reference_p10_ms == 0 && t_reference_p90_ms == 0;
}

namespace {
json num(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

struct In {
  const json& j;
  std::size_t line;
  std::string prefix;
  [[noreturn]] void bad(const std::string& f, const char* what) const {
    throw RecordError(line, "profile." + prefix + f, std::string("expected ") + what);
  }
  void str(const char* f, std::string& out) const {
    if (!j.contains(f) || j[f].is_null()) return;
    if (!j[f].is_string()) bad(f, "a string");
    out = j[f].get<std::string>();
  }
  void real(const char* f, double& out) const {
    if (!j.contains(f) || j[f].is_null()) return;
    if (!j[f].is_number()) bad(f, "a number");
    out = j[f].get<double>();
  }
  void integer(const char* f, int& out) const {
    if (!j.contains(f) || j[f].is_null()) return;
    if (!j[f].is_number_integer()) bad(f, "an integer");
    out = j[f].get<int>();
  }
  template <class T, class F>
  void list(const char* f, std::vector<T>& out, F each) const {
    if (!j.contains(f) || j[f].is_null()) return;
    if (!j[f].is_array()) bad(f, "an array");
    for (std::size_t i = 0; i < j[f].size(); ++i) {
      if (!j[f][i].is_object()) bad(std::string(f) + "[" + std::to_string(i) + "]", "an object");
      T v;
      each(In{j[f][i], line, prefix + f + "[" + std::to_string(i) + "]."}, v);
      out.push_back(std::move(v));
    }
  }
};
}  // namespace

json to_json(const AttemptProfile& p) {
  json j = json::object();
  json res = json::array();
  for (const auto& k : p.resources)
    res.push_back({{"name", k.name},
                   {"arch", k.arch},
                   {"registers", k.registers},
                   {"stack_bytes", k.stack_bytes},
                   {"spill_store_bytes", k.spill_store_bytes},
                   {"spill_load_bytes", k.spill_load_bytes},
                   {"shared_static_bytes", k.shared_static_bytes},
                   {"local_bytes", k.local_bytes},
                   {"constant_bytes", k.constant_bytes}});
  j["resources"] = res;
  j["resources_note"] = p.resources_note;
  j["resources_ms"] = num(p.resources_ms);
  j["profiler"] = p.profiler;
  j["profiler_ms"] = num(p.profiler_ms);
  j["profiler_note"] = p.profiler_note;
  j["t_reference_p10_ms"] = num(p.t_reference_p10_ms);
  j["t_reference_p90_ms"] = num(p.t_reference_p90_ms);
  j["peaks_device"] = p.peaks_device;
  j["peak_gbps"] = num(p.peak_gbps);
  j["peak_tflops"] = num(p.peak_tflops);
  j["bottleneck_reason"] = p.bottleneck_reason;
  j["dram_fraction"] = num(p.dram_fraction);
  j["flops_fraction"] = num(p.flops_fraction);
  j["bottleneck"] = p.bottleneck;
  json f = json::array();
  for (const auto& m : p.findings)
    f.push_back({{"metric", m.metric},
                 {"label", m.label},
                 {"value", num(m.value)},
                 {"unit", m.unit},
                 {"interpretation", m.interpretation},
                 {"score", num(m.score)}});
  j["findings"] = f;
  auto times = [](const std::vector<KernelTime>& v) {
    json a = json::array();
    for (const auto& k : v) a.push_back({{"name", k.name}, {"ms", num(k.ms)}, {"launches", k.launches}});
    return a;
  };
  j["candidate_kernels"] = times(p.candidate_kernels);
  j["reference_kernels"] = times(p.reference_kernels);
  return j;
}

AttemptProfile profile_from_json(const json& j, std::size_t line) {
  AttemptProfile p;
  if (j.is_null()) return p;
  if (!j.is_object()) throw RecordError(line, "profile", "expected an object");
  In in{j, line, ""};
  in.list("resources", p.resources, [](const In& e, KernelResources& k) {
    e.str("name", k.name);
    e.str("arch", k.arch);
    e.integer("registers", k.registers);
    e.integer("stack_bytes", k.stack_bytes);
    e.integer("spill_store_bytes", k.spill_store_bytes);
    e.integer("spill_load_bytes", k.spill_load_bytes);
    e.integer("shared_static_bytes", k.shared_static_bytes);
    e.integer("local_bytes", k.local_bytes);
    e.integer("constant_bytes", k.constant_bytes);
  });
  in.str("resources_note", p.resources_note);
  in.real("resources_ms", p.resources_ms);
  in.str("profiler", p.profiler);
  in.real("profiler_ms", p.profiler_ms);
  in.str("profiler_note", p.profiler_note);
  in.real("t_reference_p10_ms", p.t_reference_p10_ms);
  in.real("t_reference_p90_ms", p.t_reference_p90_ms);
  in.str("peaks_device", p.peaks_device);
  in.real("peak_gbps", p.peak_gbps);
  in.real("peak_tflops", p.peak_tflops);
  in.str("bottleneck_reason", p.bottleneck_reason);
  in.real("dram_fraction", p.dram_fraction);
  in.real("flops_fraction", p.flops_fraction);
  in.str("bottleneck", p.bottleneck);
  in.list("findings", p.findings, [](const In& e, MetricFinding& m) {
    e.str("metric", m.metric);
    e.str("label", m.label);
    e.real("value", m.value);
    e.str("unit", m.unit);
    e.str("interpretation", m.interpretation);
    e.real("score", m.score);
  });
  auto kt = [](const In& e, KernelTime& k) {
    e.str("name", k.name);
    e.real("ms", k.ms);
    e.integer("launches", k.launches);
  };
  in.list("candidate_kernels", p.candidate_kernels, kt);
  in.list("reference_kernels", p.reference_kernels, kt);
  return p;
}

}  // namespace kforge
