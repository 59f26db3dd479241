#pragma once
// kforge/agent/runners.hpp — the judge runners of `kforge run` and `kforge eval` (`--devices`):
// one warm kforge-runner and judge slot per listed device. A device may repeat (`cuda:0,cuda:0`:
// two runners on one GPU, checking side by side; their timed work takes turns through the
// device's timed lock, backends/timed_lock.hpp). Declared once, for both commands.
//
// Ownership: StartedRunners owns the runner clients it started. Not thread-safe (set-up only).
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/backends/backend.hpp"
#include "kforge/backends/runner_client.hpp"

namespace kforge::agent {

/// `--devices`'s help (run's option table, which eval's --devices comes from too).
extern const char* const kDevicesHelp;

/// The devices --devices names: "all" is every GPU the judge sees (cuda) or the host (cpu); a
/// list names each runner (a device may repeat). Empty: `device`, else the backend's default.
std::vector<std::string> resolve_devices(const std::vector<std::string>& devices, const std::string& device,
                                         const backends::Backend& backend, const nlohmann::json& first_hello);

struct StartedRunners {
  int rc = 0;  ///< 0; 2 for a device that is not all, cpu or cuda:N; 3 when a runner did not start
  std::vector<std::unique_ptr<backends::RunnerClient>> runners;  ///< one per slot, in order
  nlohmann::json devices = nlohmann::json::array();              ///< [{device, runner hello}]
  std::string first_hello;                                       ///< the first runner's hello (JSON text)
};

/// Prints "WHO: kforge-runner (PATH) for DEVICE did not start; build it or set KFORGE_RUNNER".
void print_runner_not_started(const std::string& who, const backends::RunnerClient& runner);

/// Starts one warm runner per device; errors are printed to stderr prefixed with `who`
/// ("kforge run").
StartedRunners start_runners(const std::vector<std::string>& devices, const std::string& device,
                             const backends::Backend& backend, const std::string& who);

}  // namespace kforge::agent
