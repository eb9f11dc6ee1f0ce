// A streaming message digest in lowercase hex, for the host and every plugin that checks an
// artifact before writing it to a backend: sha256 or sha512 over OpenSSL's EVP interface. A
// plugin that includes this header links OpenSSL's libcrypto (CMake: OpenSSL::Crypto,
// pkg-config: libcrypto); nothing of it crosses the ABI.
#pragma once

#include <openssl/evp.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace banlieue::sdk {

class Digest {
 public:
  // The algorithms every checksum field of the API accepts.
  static bool supported(std::string_view algorithm) {
    return algorithm == "sha256" || algorithm == "sha512";
  }
  // Hex digits of a digest of `algorithm` (0 when unsupported).
  static size_t hexLength(std::string_view algorithm) {
    return algorithm == "sha256" ? 64 : algorithm == "sha512" ? 128 : 0;
  }

  // Starts a digest of `algorithm` ("sha256" or "sha512"); std::invalid_argument for any other,
  // std::runtime_error when OpenSSL cannot start one.
  explicit Digest(std::string_view algorithm) : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
    const EVP_MD* md = algorithm == "sha256"   ? EVP_sha256()
                       : algorithm == "sha512" ? EVP_sha512()
                                               : nullptr;
    if (md == nullptr) {
      throw std::invalid_argument("checksum algorithm '" + std::string(algorithm) +
                                  "' is not supported (sha256 or sha512)");
    }
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), md, nullptr) != 1) {
      throw std::runtime_error("cannot start a " + std::string(algorithm) + " digest");
    }
  }

  void update(const void* data, size_t size) {
    if (size > 0) EVP_DigestUpdate(ctx_.get(), data, size);
  }
  void update(std::string_view data) { update(data.data(), data.size()); }

  // The digest of everything updated so far, in lowercase hex; call once.
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest, &length);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(size_t{length} * 2);
    for (unsigned int i = 0; i < length; ++i) {
      out.push_back(kHex[digest[i] >> 4]);
      out.push_back(kHex[digest[i] & 0xf]);
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

// The sha256 of bytes in memory, in lowercase hex.
inline std::string sha256Hex(std::string_view data) {
  Digest digest("sha256");
  digest.update(data);
  return digest.hex();
}

}  // namespace banlieue::sdk
