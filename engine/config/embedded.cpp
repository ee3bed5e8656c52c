#include "engine/config/embedded.h"

namespace prima::config {

std::optional<std::string_view> embedded_file(std::string_view path) {
  for (const auto& f : embedded_files())
    if (path == f.path) return std::string_view(f.content);
  return std::nullopt;
}

}  // namespace prima::config
