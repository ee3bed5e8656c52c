// sha256 of a file with OpenSSL's EVP digest API, read in 1 MiB chunks.
#include <openssl/evp.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "backends/real/gguf.h"

namespace prima::real {

Result<std::string> sha256_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return not_found("cannot open " + path + " to compute its sha256");
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    return internal_error("sha256: OpenSSL digest initialisation failed");
  std::vector<unsigned char> buf(1 << 20);
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0)
    EVP_DigestUpdate(ctx.get(), buf.data(), n);
  if (std::ferror(f.get())) return internal_error("read error on " + path + " (sha256)");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

}  // namespace prima::real
