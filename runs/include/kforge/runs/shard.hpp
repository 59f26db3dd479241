// kforge/runs/shard.hpp — which (task, sample) episodes a shard of a run owns (`kforge run
// --shard K/N`, issue 20 §4).
//
// A Shard K/N (0 <= K < N) owns the episodes whose key hashes to K:
//
//   shard_of(task, sample, N) = H mod N, where H is the first 8 bytes, read big-endian, of the
//   SHA-256 of the bytes of the task id, one NUL byte, and the sample in decimal
//   (e.g. "activation/gelu_tanh\0" "1").
//
// The assignment depends on the key alone, not on its position in the episode list, so adding,
// removing or reordering tasks never moves another episode to a different shard; shards of one
// N partition every episode list (each key in exactly one shard). Changing N reassigns keys.
// The balance is statistical (each shard gets a binomial share: for 1,000 episodes over 8
// shards, 125 ± ~10), not exact; a shard may own no episode at all, which is a valid, empty run.
// The formula is part of the run format: `kforge merge` checks every record against it, so it
// must not change without a new kRunSchemaVersion.
//
// Values and pure functions only; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

/// Shard `index` of `count` (0 <= index < count). The default, 0/1, owns every episode.
struct Shard {
  int index = 0;
  int count = 1;
  bool operator==(const Shard&) const = default;
};

/// One episode of a run: a task and a 0-based sample.
struct EpisodeKey {
  std::string task;
  int sample = 0;
  bool operator==(const EpisodeKey&) const = default;
};

/// Parses "K/N" (decimal, 0 <= K < N, N <= 1,000,000). Nothing else is accepted (no spaces,
/// signs or trailing text); std::nullopt when `text` is not such a pair.
std::optional<Shard> parse_shard(std::string_view text);

/// "K/N".
std::string to_string(const Shard& s);

/// The stable 64-bit hash of an episode key (the formula above).
std::uint64_t episode_hash(std::string_view task, int sample);

/// The shard (0..count-1) that owns (task, sample) among `count` shards. count >= 1, else
/// std::invalid_argument.
int shard_of(std::string_view task, int sample, int count);

/// True when shard `s` owns (task, sample).
bool in_shard(const Shard& s, std::string_view task, int sample);

/// The keys of `keys` that shard `s` owns, in their given order.
std::vector<EpisodeKey> select_shard(const std::vector<EpisodeKey>& keys, const Shard& s);

}  // namespace kforge
