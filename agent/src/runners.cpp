// agent/src/runners.cpp — the judge runners of run and eval (runners.hpp).
#include "kforge/agent/runners.hpp"

#include <CLI/CLI.hpp>
#include <iostream>
#include <thread>

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
  const std::vector<std::string> list = resolve_devices(devices, device, backend, hello_j);
  for (const auto& d : list)
    if (d != "cpu" && d.rfind("cuda:", 0) != 0) {
      std::cerr << who << ": --devices " << d << ": expected all, cpu or cuda:N\n";
      s.rc = 2;
      return s;
    }
  // The runners start at once (each imports torch: seconds), each client on its own thread.
  std::vector<std::string> hellos(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i == 0 && list[0] == first) {
      s.runners.push_back(std::move(probe));
      hellos[0] = s.first_hello;
      continue;
    }
    rc.device = list[i];
    s.runners.push_back(std::make_unique<backends::RunnerClient>(rc));
  }
  std::vector<std::thread> starting;
  for (std::size_t i = 0; i < list.size(); ++i)
    if (hellos[i].empty()) starting.emplace_back([&, i] { hellos[i] = s.runners[i]->hello(); });
  for (auto& t : starting) t.join();
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (hellos[i].empty()) {
      std::cerr << who << ": the runner for " << list[i] << " did not start\n";
      s.rc = 3;
      s.runners.clear();
      return s;
    }
    const json hj = json::parse(hellos[i], nullptr, false);
    s.devices.push_back({{"device", list[i]}, {"runner", hj.is_discarded() ? json(hellos[i]) : hj}});
  }
  return s;
}

}  // namespace kforge::agent
