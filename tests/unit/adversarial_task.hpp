#pragma once
// tests/unit/adversarial_task.hpp — the adversarial sets' task (tests/data/adversarial/task.py,
// id adversarial/relu2_add) as the judge receives it, parsed afresh on every call. Fails the
// calling test when the fixture cannot be parsed.
#include <filesystem>

#include "catch.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/benchmarks/task.hpp"

inline kforge::backends::TaskRef adversarial_task() {
  auto parsed = kforge::parse_task_file(std::filesystem::path(KFORGE_TESTS_DIR) / "data/adversarial/task.py",
                                        "adversarial/relu2_add");
  REQUIRE(parsed.task);
  return kforge::agent::task_ref(*parsed.task, "");
}
