// tests/unit/test_fake_backend.cpp — a new backend by docs/ARCHITECTURE.md's checklist ("Adding a
// backend"): its folder (tests/fake_backend: a Backend built by kforge_backend() against the
// core's headers alone, make_fake_backend(), its prompts/) and its registry line. Once
// registered, everything that lists or looks up backends has it: the registry, `--backend`,
// the prompt renderer (its own templates), compile() and the candidate host it names.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>

#include "catch.hpp"
#include "kforge/agent/run_options.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/backends/compile.hpp"
#include "kforge/prompts/prompts.hpp"
#include "scratch_dir.hpp"

namespace kforge::backends {
// What the registry line `KFORGE_BUILTIN_BACKEND(fake)` declares (backend.cpp).
std::shared_ptr<const Backend> make_fake_backend();
}  // namespace kforge::backends

using namespace kforge;
namespace fs = std::filesystem;

namespace {

/// The fake backend, registered once per process as a KFORGE_BACKENDS line registers a
/// built-in backend: its folder's make_<name>_backend() handed to the registry.
const backends::Backend& fake() {
  static const backends::Backend* b = [] {
    if (!backends::find_backend("fake")) backends::register_backend(backends::make_fake_backend());
    return &backends::get_backend("fake");
  }();
  return *b;
}

}  // namespace

TEST_CASE("a new backend is its folder and one registry line: registry, --backend, prompts",
          "[backends][registry]") {
  const auto& b = fake();
  CHECK(&b == backends::find_backend("fake"));
  const auto names = backends::backend_names();
  CHECK(std::find(names.begin(), names.end(), "fake") != names.end());
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(b.default_device() == "cpu");
  CHECK(b.host_kind() == backends::HostKind::native);  // a shared object: kforge-host
  CHECK_FALSE(b.inspects_precision());                 // the default: not inspected
  CHECK(b.extract("```fake\nextern \"C\" int kf_forward(int n) { return n; }\n```").ok);
  CHECK_FALSE(b.extract("```cpp\nextern \"C\" int kf_forward(int n) { return n; }\n```").ok);

  // `kforge run --backend fake` is accepted (the option's choices are the registry's); a name
  // nothing registered is refused.
  agent::RunCommand cmd;
  CLI::App app;
  agent::add_run_options(app, cmd);
  app.parse(std::vector<std::string>{"fake", "--backend"});  // CLI11 takes them last first
  CHECK(cmd.backend == "fake");
  agent::RunCommand other;
  CLI::App app2;
  agent::add_run_options(app2, other);
  CHECK_THROWS_AS(app2.parse(std::vector<std::string>{"hip", "--backend"}), CLI::ValidationError);

  // Its prompts come from its own folder (Backend::prompts_dir), fenced in its language.
  REQUIRE(fs::exists(b.prompts_dir() / "system.md"));
  prompts::PromptInput in;
  in.backend = b.name();
  in.backend_prompts = b.prompts_dir();
  in.language = b.prompt_language();
  in.device_type = b.device_type();
  in.device = b.default_device();
  in.task_id = "fake/relu";
  in.reference = "class Model(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n";
  const auto p = prompts::render_prompt(in);
  CHECK_THAT(p.system, Catch::Contains("kernels for the fake backend"));
  CHECK_THAT(p.user, Catch::Contains("fenced ```fake code block"));
}

TEST_CASE("a new backend's candidate compiles through compile() and the symbol check",
          "[backends][registry]") {
  const auto& b = fake();
  if (!b.find_compiler({})) {
    WARN("SKIPPED: g++ not found on PATH");
    return;
  }
  const fs::path work = scratch("fake-backend");
  backends::CompileOptions co;
  const auto ok =
      backends::compile(b,
                        "#include <kforge/kernel_abi.h>\n"
                        "extern \"C\" int kf_forward(const kf_tensor*, int, kf_tensor*, int, void*) "
                        "{ return 0; }\n",
                        work / "ok", co);
  INFO(ok.summary);
  CHECK(ok.ok());
  CHECK(fs::exists(work / "ok" / "kernel.fake"));
  // A compiler error is the candidate's compile_error, its diagnostics read from the build log.
  const auto bad = backends::compile(b, "extern \"C\" int kf_forward( { }\n", work / "bad", co);
  CHECK(bad.status == backends::CompileStatus::compile_error);
  CHECK(bad.outcome() == Outcome::compile_error);
}
