// kforge/common/hash.hpp — content hashing (SHA-256 via OpenSSL's libcrypto).
//
// Used for compile-cache keys and attempt records. Stateless free functions plus a
// small incremental Hasher that one thread owns; all are thread-safe on distinct objects.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace kforge {

/// Hex SHA-256 (64 lowercase characters) of a byte string.
std::string sha256_hex(std::string_view data);

/// Incremental SHA-256. Each update is length-prefixed, so ("ab","c") != ("a","bc").
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher& update(std::string_view part);
  /// Finishes and returns the hex digest; the Hasher must not be updated afterwards.
  std::string hex();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge
