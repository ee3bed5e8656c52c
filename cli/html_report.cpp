#include "cli/html_report.h"

namespace prima::cli {

// Placeholder until the renderer lands (reports/): says so instead of writing nothing.
Status render_html_report(const std::string& kind, const std::string& dir) {
  return failed_precondition("HTML report (" + kind + ") for " + dir + ": renderer not built yet");
}

}  // namespace prima::cli
