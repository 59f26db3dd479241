#pragma once
// kforge/runs/judge_stats.hpp — where a run's judge slots spent their time (issue 20), summed
// from the attempts' judge timing (judge_timing.hpp): the total per phase, and per slot its
// busy time against the window in which work was queued for it. `kforge stats RUN` prints it.
// Values and pure functions; thread-safe.
#include <string>
#include <vector>

#include "kforge/runs/attempt.hpp"

namespace kforge {

/// One phase over a run. `phase` is the record's name ("judge.check.host_start"), or a parent's
/// name with ".(other)" for the part of the parent its children do not account for.
struct PhaseTotal {
  std::string phase;
  double total_ms = 0;
  int attempts = 0;  ///< attempts whose record has the phase
  int depth = 0;     ///< 0 for wait, load, judge, record; 1 for judge.check; ...
};

/// One judge slot of one session (a `kforge run` process: its slot jobs share a clock).
struct SlotUse {
  std::string session, slot;
  int jobs = 0;
  double busy_ms = 0;    ///< sum of its jobs' start..end
  double queued_ms = 0;  ///< the union of its jobs' queued..end: the time work was waiting or running
  double span_ms = 0;    ///< first job queued to last job ended
  double busy_fraction() const { return queued_ms > 0 ? busy_ms / queued_ms : 0; }
};

struct JudgeStats {
  int attempts = 0;  ///< records read
  int timed = 0;     ///< records with judge timing
  int loads = 0, judges = 0;
  std::vector<PhaseTotal> phases;  ///< in tree order: wait, load, judge and its parts, record, others
  std::vector<SlotUse> slots;      ///< by session, then slot
};

JudgeStats judge_stats(const std::vector<AttemptRecord>& records);

/// The phase table and the slot table, as text.
std::string render_judge_stats(const JudgeStats& s);

}  // namespace kforge
