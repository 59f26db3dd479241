// agent/src/runners.cpp — the judge runners of run and eval (runners.hpp).
#include "kforge/agent/runners.hpp"

#include <CLI/CLI.hpp>
#include <iostream>

namespace kforge::agent {

using json = nlohmann::json;

const char* const kDevicesHelp =
    "judge runners, one slot each: all (every GPU; the host for cpu) or a list such as cuda:0,cuda:2 or "
    "cpu,cpu (comma-separated); a device may repeat (cuda:0,cuda:0: two runners check on one GPU at once, "
    "their timed work takes turns)";

void add_devices_option(CLI::App& app, std::vector<std::string>& devices) {
  app.add_option("--devices", devices, kDevicesHelp)->delimiter(',');
}

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

StartedRunners start_runners(const std::vector<std::string>& devices, const std::string& device,
                             const backends::Backend& backend, const std::string& who) {
  StartedRunners s;
  const std::string first = devices.empty() || devices[0] == "all"
                                ? (device.empty() ? backend.default_device() : device)
                                : devices[0];
  backends::RunnerConfig rc;
  rc.device = first;
  auto probe = std::make_unique<backends::RunnerClient>(rc);
  s.first_hello = probe->hello();
  if (s.first_hello.empty()) {
    std::cerr << who << ": kforge-runner (" << probe->config().runner.string()
              << ") did not start; build it or set KFORGE_RUNNER\n";
    s.rc = 3;
    return s;
  }
  const json hello_j = json::parse(s.first_hello, nullptr, false);
  for (const auto& d : resolve_devices(devices, device, backend, hello_j)) {
    if (d != "cpu" && d.rfind("cuda:", 0) != 0) {
      std::cerr << who << ": --devices " << d << ": expected all, cpu or cuda:N\n";
      s.rc = 2;
      return s;
    }
    std::unique_ptr<backends::RunnerClient> r;
    if (s.runners.empty() && d == first) {
      r = std::move(probe);
    } else {
      rc.device = d;
      r = std::make_unique<backends::RunnerClient>(rc);
    }
    const std::string h = r->hello();
    if (h.empty()) {
      std::cerr << who << ": the runner for " << d << " did not start\n";
      s.rc = 3;
      return s;
    }
    const json hj = json::parse(h, nullptr, false);
    s.devices.push_back({{"device", d}, {"runner", hj.is_discarded() ? json(h) : hj}});
    s.runners.push_back(std::move(r));
  }
  return s;
}

}  // namespace kforge::agent
