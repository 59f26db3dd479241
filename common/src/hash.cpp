#include "kforge/common/hash.hpp"

#include <openssl/evp.h>

#include <cstdint>
#include <stdexcept>

namespace kforge {

namespace {
std::string to_hex(const unsigned char* md, unsigned int len) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(digits[md[i] >> 4]);
    out.push_back(digits[md[i] & 15]);
  }
  return out;
}
}  // namespace

struct Hasher::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Hasher::Hasher() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("Hasher: EVP_DigestInit_ex failed");
}

Hasher::~Hasher() {
  EVP_MD_CTX_free(impl_->ctx);
}

Hasher& Hasher::update(std::string_view part) {
  std::uint64_t n = part.size();
  EVP_DigestUpdate(impl_->ctx, &n, sizeof n);
  EVP_DigestUpdate(impl_->ctx, part.data(), part.size());
  return *this;
}

std::string Hasher::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &len);
  return to_hex(md, len);
}

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return to_hex(md, len);
}

}  // namespace kforge
