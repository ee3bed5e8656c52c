// Data files compiled into the binary (topologies/*.json, scenarios/*.json, reports/*.py),
// generated at build time by cmake/embed.cmake. Immutable; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace prima::config {

struct EmbeddedFile {
  const char* path;  // relative to the repository root, e.g. "topologies/bitbrick_k1.json"
  const char* content;
};

std::span<const EmbeddedFile> embedded_files();

// Content of an embedded file by relative path.
std::optional<std::string_view> embedded_file(std::string_view path);

}  // namespace prima::config
