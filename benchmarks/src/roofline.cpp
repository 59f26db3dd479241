#include "kforge/benchmarks/roofline.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "kforge/common/util.hpp"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string_view to_string(Bottleneck b) {
  switch (b) {
    case Bottleneck::memory:
      return "memory-bound";
    case Bottleneck::compute:
      return "compute-bound";
    case Bottleneck::latency:
      return "latency-bound";
    case Bottleneck::unknown:
      return "unknown";
  }
  return "unknown";
}

namespace {
std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}
}  // namespace

Roofline roofline(double time_ms, double bytes, double flops, const DevicePeaks& peaks,
                  const RooflineThresholds& t) {
  Roofline r;
  r.time_ms = time_ms;
  r.bytes = bytes;
  r.flops = flops;
  if (!(time_ms > 0) || !std::isfinite(time_ms)) {
    r.reason = "no time measured";
    return r;
  }
  const double s = time_ms * 1e-3;
  if (bytes > 0) r.achieved_bytes_per_s = bytes / s;
  if (flops > 0) r.achieved_flops_per_s = flops / s;
  if (bytes > 0 && flops > 0) r.intensity = flops / bytes;
  if (peaks.dram_bytes_per_s > 0) r.dram_fraction = r.achieved_bytes_per_s / peaks.dram_bytes_per_s;
  if (peaks.flops_per_s > 0) r.flops_fraction = r.achieved_flops_per_s / peaks.flops_per_s;
  if (peaks.dram_bytes_per_s > 0 && peaks.flops_per_s > 0)
    r.ridge = peaks.flops_per_s / peaks.dram_bytes_per_s;
  const bool know_mem = bytes > 0 && peaks.dram_bytes_per_s > 0;
  const bool know_flop = flops > 0 && peaks.flops_per_s > 0;
  if (!know_mem && !know_flop) {
    r.reason = peaks.dram_bytes_per_s > 0 || peaks.flops_per_s > 0 ? "neither bytes nor FLOPs known"
                                                                   : "no measured peaks for this device";
    return r;
  }
  r.exceeds_peak = r.dram_fraction > t.exceeds_fraction || r.flops_fraction > t.exceeds_fraction;
  const std::string mem =
      know_mem ? fmt("DRAM at %.0f%% of measured peak (%.0f of %.0f GB/s)", 100 * r.dram_fraction,
                     r.achieved_bytes_per_s / 1e9, peaks.dram_bytes_per_s / 1e9)
               : "";
  const std::string comp =
      know_flop ? fmt("FP32 at %.0f%% of measured peak (%.2f of %.1f TFLOP/s)", 100 * r.flops_fraction,
                      r.achieved_flops_per_s / 1e12, peaks.flops_per_s / 1e12)
                : "";
  const double top = std::max(r.dram_fraction, r.flops_fraction);
  if (top < t.busy_fraction) {
    r.bottleneck = Bottleneck::latency;
    r.launch_bound = time_ms * 1e3 < t.launch_us;
    r.reason =
        (mem.empty()    ? comp
         : comp.empty() ? mem
                        : mem + ", " + comp) +
        (r.launch_bound ? fmt(": the call takes %.1f us, a few kernel launches (launch-bound)", time_ms * 1e3)
                        : ": no resource is busy (latency, occupancy or synchronisation)");
  } else if (r.dram_fraction >= r.flops_fraction) {
    r.bottleneck = Bottleneck::memory;
    r.reason = mem;
  } else {
    r.bottleneck = Bottleneck::compute;
    r.reason = comp;
  }
  if (r.exceeds_peak)
    r.reason += " (above the measured peak: the byte/FLOP formula or the timing is suspect)";
  return r;
}

Bottleneck classify_fractions(double dram_fraction, double flops_fraction, const RooflineThresholds& t) {
  if (!(dram_fraction >= 0) || !(flops_fraction >= 0)) return Bottleneck::unknown;
  if (std::max(dram_fraction, flops_fraction) < t.busy_fraction) return Bottleneck::latency;
  return dram_fraction >= flops_fraction ? Bottleneck::memory : Bottleneck::compute;
}

int dtype_size(const std::string& dtype) {
  if (dtype == "complex128") return 16;
  if (dtype == "float64" || dtype == "int64" || dtype == "complex64") return 8;
  if (dtype == "float16" || dtype == "bfloat16" || dtype == "int16") return 2;
  if (dtype == "bool" || dtype == "uint8" || dtype == "int8") return 1;
  return 4;
}

double io_bytes(const std::vector<TensorBytes>& inputs, const std::vector<TensorBytes>& outputs) {
  double total = 0;
  for (const auto* v : {&inputs, &outputs})
    for (const auto& t : *v) {
      double n = 1;
      for (auto d : t.shape) n *= static_cast<double>(d);
      total += n * dtype_size(t.dtype);
    }
  return total;
}

fs::path default_peaks_file() {
  if (const char* f = std::getenv("KFORGE_PEAKS_FILE"); f && *f) return f;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x && fs::path(x).is_absolute())
    return fs::path(x) / "kforge" / "device_peaks.json";
  if (const char* h = std::getenv("HOME"); h && *h)
    return fs::path(h) / ".cache" / "kforge" / "device_peaks.json";
  return fs::temp_directory_path() / "kforge-cache" / "device_peaks.json";
}

std::map<std::string, DevicePeaks> load_peaks_file(const fs::path& file) {
  std::map<std::string, DevicePeaks> out;
  std::error_code ec;
  if (!fs::exists(file, ec)) return out;
  auto fail = [&](const std::string& field, const std::string& why) -> std::runtime_error {
    return std::runtime_error(file.string() + ": " + field + ": " + why);
  };
  json j;
  try {
    j = json::parse(read_file(file));
  } catch (const std::exception& e) {
    throw fail("", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw fail("", "expected an object");
  if (j.contains("schema") && (!j["schema"].is_number_integer() || j["schema"].get<int>() != 1))
    throw fail("schema", "expected 1");
  if (!j.contains("devices")) return out;
  if (!j["devices"].is_object()) throw fail("devices", "expected an object keyed by device name");
  for (const auto& [name, d] : j["devices"].items()) {
    const std::string at = "devices." + name;
    if (!d.is_object()) throw fail(at, "expected an object");
    DevicePeaks p;
    p.device = name;
    for (auto [key, field] :
         {std::pair{"dram_bytes_per_s", &p.dram_bytes_per_s}, std::pair{"flops_per_s", &p.flops_per_s}}) {
      if (!d.contains(key)) continue;
      if (!d[key].is_number() || d[key].get<double>() < 0)
        throw fail(at + "." + key, "expected a number >= 0");
      *field = d[key].get<double>();
    }
    for (auto [key, field] : {std::pair{"measured_at", &p.measured_at}, std::pair{"method", &p.method}}) {
      if (!d.contains(key)) continue;
      if (!d[key].is_string()) throw fail(at + "." + key, "expected a string");
      *field = d[key].get<std::string>();
    }
    out[name] = p;
  }
  return out;
}

std::optional<DevicePeaks> load_peaks(const fs::path& file, const std::string& device) {
  try {
    auto all = load_peaks_file(file);
    if (auto it = all.find(device); it != all.end()) return it->second;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

void save_peaks(const fs::path& file, const DevicePeaks& peaks) {
  std::map<std::string, DevicePeaks> all;
  try {
    all = load_peaks_file(file);
  } catch (const std::exception&) {
    // a malformed cache is replaced
  }
  all[peaks.device] = peaks;
  json devices = json::object();
  for (const auto& [name, p] : all)
    devices[name] = {{"dram_bytes_per_s", p.dram_bytes_per_s},
                     {"flops_per_s", p.flops_per_s},
                     {"measured_at", p.measured_at},
                     {"method", p.method}};
  json j{{"schema", 1}, {"devices", devices}};
  if (!file.parent_path().empty()) fs::create_directories(file.parent_path());
  const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  write_file(tmp, j.dump(2) + "\n");
  fs::rename(tmp, file);
}

}  // namespace kforge
