#pragma once
// kforge/backends/host_kind.hpp — which candidate host runs a backend's artifact (issue 21 §6).
//
// A HostKind names one of the judge's candidate hosts (docs/ARCHITECTURE.md, "The trust
// boundary"): `native`, kforge-host, which dlopens a shared object exporting kf_forward; and
// `python`, the Triton host (backends/triton/host.py), which imports a Python module. A backend
// states the host it needs (Backend::host_kind); the runner client sends it with every request
// that names an artifact ("host", a required field), and the judge starts that host: the
// artifact's file name never chooses it.
//
// Header-only (it is also compiled into kforge-runner, which links nothing of kforge_backends);
// plain values and pure functions, thread-safe.

#include <optional>
#include <string_view>

namespace kforge::backends {

enum class HostKind { native, python };

/// The protocol's name: "native" or "python".
constexpr std::string_view to_string(HostKind h) {
  return h == HostKind::python ? "python" : "native";
}

/// The HostKind a protocol name stands for; std::nullopt for any other text.
constexpr std::optional<HostKind> parse_host_kind(std::string_view name) {
  if (name == "native") return HostKind::native;
  if (name == "python") return HostKind::python;
  return std::nullopt;
}

}  // namespace kforge::backends
