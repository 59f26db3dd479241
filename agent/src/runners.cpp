// agent/src/runners.cpp — the judge runners of run and eval (runners.hpp).
#include "kforge/agent/runners.hpp"

#include <iostream>
#include <thread>

namespace kforge::agent {

using json = nlohmann::json;

const char* const kDevicesHelp =
    "judge runners, one slot each: all (every GPU; the host for cpu) or a list such as cuda:0,cuda:2 or "
    "cpu,cpu (comma-separated); a device may repeat (cuda:0,cuda:0: two runners check on one GPU at once, "
    "their timed work takes turns)";

std::vector<std::string> resolve_devices(const std::vector<std::string>& devices, const std::string& device,
                                         const backends::Backend& backend, const json& first_hello) {
  const std::string one = device.empty() ? backend.default_device() : device;
  if (devices.empty()) return {one};
  if (devices != std::vector<std::string>{"all"}) return devices;
  if (!backend.on_gpu()) return {"cpu"};
  std::vector<std::string> v;
  if (first_hello.is_object() && first_hello.contains("devices") && first_hello["devices"].is_array())
    for (const auto& d : first_hello["devices"])
      if (d.is_object() && d.contains("index")) v.push_back("cuda:" + std::to_string(d["index"].get<int>()));
  return v.empty() ? std::vector<std::string>{one} : v;
}

void print_runner_not_started(const std::string& who, const backends::RunnerClient& runner) {
  std::cerr << who << ": kforge-runner (" << runner.config().runner.string() << ") for "
            << runner.config().device << " did not start; build it or set KFORGE_RUNNER\n";
}

namespace {

/// Starts the runners of `list` at once (each imports torch: seconds), each client on its own
/// thread; `ready` holds a runner already started for list[0] (the probe of --devices all).
/// Fills s.runners and s.devices; rc 3 when one did not start.
void start_list(const std::vector<std::string>& list, std::unique_ptr<backends::RunnerClient> ready,
                const std::string& ready_hello, const backends::Backend& backend, const std::string& who,
                StartedRunners& s) {
  std::vector<std::string> hellos(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i == 0 && ready && list[0] == ready->config().device) {
      s.runners.push_back(std::move(ready));
      hellos[0] = ready_hello;
      continue;
    }
    backends::RunnerConfig rc;
    rc.device = list[i];
    s.runners.push_back(std::make_unique<backends::RunnerClient>(rc));
  }
  std::vector<std::thread> starting;
  for (std::size_t i = 0; i < list.size(); ++i)
    if (hellos[i].empty())
      starting.emplace_back([&, i] {
        auto said = s.runners[i]->hello();  // "" when it failed: print_runner_not_started says why
        hellos[i] = said ? said.value() : "";
        // The backend's candidate host started warm now (the Triton zygote imports torch and
        // Triton while the first candidates are scanned), not at the first check.
        if (!hellos[i].empty()) s.runners[i]->prewarm(backend.host_kind());
      });
  for (auto& t : starting) t.join();
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (hellos[i].empty()) {
      print_runner_not_started(who, *s.runners[i]);
      s.rc = 3;
      s.runners.clear();
      return;
    }
    const json hj = json::parse(hellos[i], nullptr, false);
    s.devices.push_back({{"device", list[i]}, {"runner", hj.is_discarded() ? json(hellos[i]) : hj}});
  }
  s.first_hello = hellos[0];
}

}  // namespace

StartedRunners start_runners(const std::vector<std::string>& devices, const std::string& device,
                             const backends::Backend& backend, const std::string& who) {
  StartedRunners s;
  // Only `all` needs a runner's word (the GPUs it sees) before the others start.
  std::unique_ptr<backends::RunnerClient> probe;
  std::string probe_hello;
  if (devices == std::vector<std::string>{"all"}) {
    backends::RunnerConfig rc;
    rc.device = device.empty() ? backend.default_device() : device;
    probe = std::make_unique<backends::RunnerClient>(rc);
    auto said = probe->hello();
    probe_hello = said ? said.value() : "";
    if (probe_hello.empty()) {
      print_runner_not_started(who, *probe);
      s.rc = 3;
      return s;
    }
  }
  const std::vector<std::string> list =
      resolve_devices(devices, device, backend, json::parse(probe_hello.empty() ? "null" : probe_hello));
  for (const auto& d : list)
    if (d != "cpu" && d.rfind("cuda:", 0) != 0) {
      std::cerr << who << ": --devices " << d << ": expected all, cpu or cuda:N\n";
      s.rc = 2;
      return s;
    }
  start_list(list, std::move(probe), probe_hello, backend, who, s);
  return s;
}

}  // namespace kforge::agent
