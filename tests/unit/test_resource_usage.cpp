// [profile] issue 11 §1: compile-time resource usage of CUDA kernels — the cuobjdump and
// ptxas -v parsers on committed real output (tests/data/profile/, from resource_kernels.cu,
// nvcc 13.0 -arch=sm_90, cuobjdump 13.1), and a live nvcc -shared + cuobjdump run where both
// exist (no GPU needed).
#include <unistd.h>

#include <filesystem>
#include <string>

#include "catch.hpp"
#include "kforge/agent/attempt_record.hpp"
#include "kforge/backends/resource_usage.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/attempt.hpp"
#include "kforge/sandbox/subprocess.hpp"

using namespace kforge;
using namespace kforge::backends;
namespace fs = std::filesystem;

namespace {
const fs::path kData = fs::path(KFORGE_TESTS_DIR) / "data/profile";
const KernelResources* by_prefix(const std::vector<KernelResources>& v, const std::string& p) {
  for (const auto& k : v)
    if (starts_with(k.name, p)) return &k;
  return nullptr;
}
}  // namespace

TEST_CASE("cuobjdump --dump-resource-usage: per-kernel registers, stack, shared memory", "[profile]") {
  auto ks = parse_cuobjdump_resource_usage(read_file(kData / "cuobjdump_resource_usage.txt"));
  REQUIRE(ks.size() == 3);
  const auto* add = by_prefix(ks, "add_kernel(");
  const auto* spill = by_prefix(ks, "spill_kernel(");
  const auto* heavy = by_prefix(ks, "heavy_kernel(");
  REQUIRE(add);
  REQUIRE(spill);
  REQUIRE(heavy);
  CHECK(add->name == "add_kernel(float const*, float const*, float*, int)");
  CHECK(add->arch == "sm_90");
  CHECK(add->registers == 12);
  CHECK(add->stack_bytes == 0);
  CHECK(add->shared_static_bytes == 0);
  CHECK(add->constant_bytes == 556);
  CHECK(spill->registers == 32);
  CHECK(spill->stack_bytes == 256);
  CHECK(spill->shared_static_bytes == 2048);
  CHECK(heavy->stack_bytes == 560);
  CHECK(heavy->spill_store_bytes == -1);  // cuobjdump does not say

  auto px = parse_ptxas_verbose(read_file(kData / "ptxas_verbose.txt"));
  REQUIRE(px.size() == 3);
  const auto* hp = by_prefix(px, "heavy_kernel(");
  REQUIRE(hp);
  CHECK(hp->spill_store_bytes == 648);
  CHECK(hp->spill_load_bytes == 904);
  CHECK(hp->registers == 32);
  CHECK(by_prefix(px, "spill_kernel(")->shared_static_bytes == 1024);

  merge_resources(ks, px);
  REQUIRE(ks.size() == 3);
  heavy = by_prefix(ks, "heavy_kernel(");
  CHECK(heavy->spill_store_bytes == 648);
  CHECK(heavy->spill_load_bytes == 904);
  CHECK(heavy->shared_static_bytes == 0);  // cuobjdump's value stays
  const std::string d = describe_resources(ks);
  CHECK_THAT(d, Catch::Contains(
                    "heavy_kernel: 32 registers/thread, 560 B stack, spills 648 B stores / 904 B loads"));
}

TEST_CASE("resource usage: kernels in an anonymous namespace keep their names", "[profile]") {
  // Seen on the H100: the exemplars' kernels live in an anonymous namespace, and the feedback
  // showed ": 32 registers/thread" with the name cut at "(anonymous namespace)"'s parenthesis.
  KernelResources k;
  k.name = "(anonymous namespace)::gelu_vec4(float4 const*, float4*, long)";
  k.registers = 31;
  CHECK_THAT(describe_resources({k}),
             Catch::Matchers::StartsWith("(anonymous namespace)::gelu_vec4: 31 registers/thread"));
  CHECK(kernel_display_name("void reduce_kernel<512, 1>(R)") == "void reduce_kernel<512, 1>");
  CHECK(kernel_display_name("plain") == "plain");
}

TEST_CASE("resource usage: a missing cuobjdump is a note, never a failure", "[profile]") {
  setenv("KFORGE_CUOBJDUMP", "/nonexistent/cuobjdump", 1);
  const char* old_path = std::getenv("PATH");
  std::string saved = old_path ? old_path : "";
  setenv("PATH", "/nonexistent", 1);
  const char* cuda_home = std::getenv("CUDA_HOME");
  std::string saved_home = cuda_home ? cuda_home : "";
  unsetenv("CUDA_HOME");
  auto ru = resource_usage("/nonexistent/kernel.so", read_file(kData / "ptxas_verbose.txt"),
                           fs::path("/nonexistent/nvcc"));
  setenv("PATH", saved.c_str(), 1);
  if (!saved_home.empty()) setenv("CUDA_HOME", saved_home.c_str(), 1);
  unsetenv("KFORGE_CUOBJDUMP");
  if (fs::exists("/usr/local/cuda/bin/cuobjdump")) {
    CHECK_FALSE(ru.note.empty());  // found but the artifact does not exist
  } else {
    CHECK_THAT(ru.note, Catch::Contains("cuobjdump not found"));
    CHECK(ru.kernels.size() == 3);  // ptxas -v from the build log still counts
  }
}

TEST_CASE("resource usage of a kernel built here with nvcc -shared (no GPU needed)", "[profile]") {
  // With cuobjdump: its dump plus ptxas -v's spills; without it (CI): ptxas -v alone.
  const fs::path dir = fs::temp_directory_path() / ("kforge-ru-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kData / "resource_kernels.cu", dir / "kernel.cu", fs::copy_options::overwrite_existing);
  sandbox::Spec spec;
  spec.argv = {"nvcc",   "-O3",     "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC",    "--cudart",
               "shared", "-Xptxas", "-v",          "-o",      "kernel.so",  "kernel.cu"};
  spec.env_set = {{"PATH", "/usr/local/cuda/bin:/usr/bin:/bin"}};
  spec.cwd = dir;
  spec.limits.wall = std::chrono::milliseconds(180'000);
  auto r = sandbox::run(spec);
  if (r.status == sandbox::Status::failed_to_start) {
    fs::remove_all(dir);
    WARN("SKIPPED: nvcc not found: " + r.error);
    return;
  }
  INFO(r.err);
  REQUIRE(r.ok());
  auto ru = resource_usage(dir / "kernel.so", r.err + r.out);
  fs::remove_all(dir);
  INFO(ru.note);
  REQUIRE(ru.kernels.size() == 3);
  const auto* heavy = by_prefix(ru.kernels, "heavy_kernel(");
  REQUIRE(heavy);
  CHECK(heavy->spill_store_bytes > 0);  // __launch_bounds__(1024, 2) forces spills
  CHECK(heavy->registers <= 32);
  CHECK(by_prefix(ru.kernels, "spill_kernel(")->shared_static_bytes >= 1024);
  if (find_cuobjdump())
    CHECK(ru.note.empty());
  else
    CHECK_THAT(ru.note, Catch::Contains("from the build's ptxas -v"));

  // The record keeps them, and they survive attempts.jsonl.
  AttemptRecord rec;
  rec.profile.resources = ru.kernels;
  auto back = attempt_from_json(nlohmann::json::parse(to_jsonl(rec)));
  REQUIRE(back.profile.resources.size() == 3);
  CHECK(back.profile.resources[0].name == ru.kernels[0].name);
  CHECK(back.profile.resources[0].registers == ru.kernels[0].registers);
}

TEST_CASE("record_resources: only for a compiled cuda attempt", "[profile]") {
  AttemptRecord rec;
  rec.backend = "cpu";
  backends::Evaluation ev;
  agent::record_resources(rec, ev);
  CHECK(rec.profile.resources.empty());
  CHECK(rec.profile.resources_note.empty());
  // An old record without "profile" reads with defaults; a wrong type names the field.
  auto old = attempt_from_json(nlohmann::json{{"task", "t"}, {"outcome", "pass"}});
  CHECK(old.profile.empty());
  CHECK_THROWS_WITH(attempt_from_json(nlohmann::json{{"profile", {{"resources", {{{"registers", "x"}}}}}}}),
                    Catch::Contains("profile.resources[0].registers"));
}
