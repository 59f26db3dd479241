#include "kforge/runs/shard.hpp"

#include <charconv>
#include <stdexcept>

#include "kforge/common/hash.hpp"

namespace kforge {

namespace {

constexpr int kMaxShards = 1000000;

/// A decimal int of `text` with nothing else around it.
std::optional<int> parse_int(std::string_view text) {
  int v = 0;
  if (text.empty() || text.front() == '+' || text.front() == '-') return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<Shard> parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto k = parse_int(text.substr(0, slash));
  auto n = parse_int(text.substr(slash + 1));
  if (!k || !n || *n < 1 || *n > kMaxShards || *k >= *n) return std::nullopt;
  return Shard{*k, *n};
}

std::string to_string(const Shard& s) {
  return std::to_string(s.index) + "/" + std::to_string(s.count);
}

std::uint64_t episode_hash(std::string_view task, int sample) {
  std::string key(task);
  key += '\0';  // a task id never holds NUL (run_dir.cpp), so the key is unambiguous
  key += std::to_string(sample);
  const std::string hex = sha256_hex(key);
  std::uint64_t v = 0;
  // The first 16 hex digits are the first 8 bytes of the digest, most significant first.
  std::from_chars(hex.data(), hex.data() + 16, v, 16);
  return v;
}

int shard_of(std::string_view task, int sample, int count) {
  if (count < 1) throw std::invalid_argument("shard count " + std::to_string(count) + " < 1");
  return static_cast<int>(episode_hash(task, sample) % static_cast<std::uint64_t>(count));
}

bool in_shard(const Shard& s, std::string_view task, int sample) {
  return s.count == 1 || shard_of(task, sample, s.count) == s.index;
}

std::vector<EpisodeKey> select_shard(const std::vector<EpisodeKey>& keys, const Shard& s) {
  std::vector<EpisodeKey> out;
  for (const auto& k : keys)
    if (in_shard(s, k.task, k.sample)) out.push_back(k);
  return out;
}

}  // namespace kforge
