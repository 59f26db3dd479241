// bench_compile: time to compile one candidate, cold (empty cache) and on a cache hit.
// Target (issue 3): cuda cold <= 3 s, hit <= 50 ms. Usage: bench_compile [out.json] [backend]
#include <filesystem>

#include "bench_util.hpp"
#include "kforge/backends/compile.hpp"

using namespace kforge;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::string backend_name = argc > 2 ? argv[2] : "cuda";
  const auto& backend = backends::get_backend(backend_name);
  fs::path src = kforge_home() / "prompts/exemplars" / backend_name / "activation/gelu_tanh" /
                 backend.source_file_name();
  std::string source = read_file(src);
  fs::path root = fs::temp_directory_path() / "kforge-bench-compile";
  fs::remove_all(root);
  std::vector<double> cold, hit;
  for (int i = 0; i < 3; ++i) {
    backends::CompileOptions o;
    o.cache_dir = root / ("cache" + std::to_string(i));  // empty: a cold compile
    auto t0 = std::chrono::steady_clock::now();
    auto r = backends::compile(backend, source, root / ("cold" + std::to_string(i)), o);
    cold.push_back(bench::ms_since(t0));
    if (!r.ok()) {
      std::fprintf(stderr, "compile failed: %s\n%s\n", std::string(to_string(r.status)).c_str(),
                   r.summary.c_str());
      return 1;
    }
    for (int k = 0; k < 5; ++k) {
      auto t1 = std::chrono::steady_clock::now();
      auto h = backends::compile(backend, source, root / ("hit" + std::to_string(i * 5 + k)), o);
      hit.push_back(bench::ms_since(t1));
      if (!h.cached) {
        std::fprintf(stderr, "expected a cache hit\n");
        return 1;
      }
    }
  }
  std::printf("%-10s %-22s %12s %12s\n", "backend", "case", "median ms", "target ms");
  std::printf("%-10s %-22s %12.1f %12s\n", backend_name.c_str(), "cold (empty cache)", bench::median(cold),
              "3000");
  std::printf("%-10s %-22s %12.1f %12s\n", backend_name.c_str(), "cache hit", bench::median(hit), "50");
  bench::write_json(argc, argv, "compile",
                    {{"backend", backend_name},
                     {"cold_ms", cold},
                     {"hit_ms", hit},
                     {"cold_median_ms", bench::median(cold)},
                     {"hit_median_ms", bench::median(hit)}});
  return 0;
}
