// libFuzzer target for the config readers: the input is a file's text, read the way
// `prima validate`, `prima simulate`, `prima plan` and the workload's trace readers read
// theirs:
//  - as JSON (parse_json_text), then as a scenario (parse_scenario, then the placement and
//    memory check that `prima validate` does), a plan spec (parse_plan), a topology
//    (parse_topology + validate) and a calibration table (parse_calibration);
//  - as a trace, line by line: JSONL (parse_jsonl) and the Azure CSV (parse_azure_csv);
//  - short inputs also as a `--set PATH=VALUE` override (apply_set) on an embedded scenario,
//    and as the unit strings of config fields (durations, byte sizes, bandwidths).
// Every reader must either succeed or return an error with a message; an exception escaping a
// reader (the CLI would die on it) or a sanitizer report is a crash. Files the input names are
// looked up under a directory that does not exist, and inputs naming device or proc files are
// skipped (reading /dev/stdin or /dev/zero would hang the run, not find a bug).
// Single-threaded (libFuzzer calls it from one thread).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "engine/capacity/plan_spec.h"
#include "engine/config/embedded.h"
#include "engine/config/json_reader.h"
#include "engine/perf/calibration.h"
#include "engine/plan/parallel_plan.h"
#include "engine/plan/topology.h"
#include "engine/scenario/scenario.h"
#include "engine/workload/trace.h"

namespace {

namespace config = prima::config;
using prima::Status;

const char* const kFile = "fuzz.json";
const char* const kBaseDir = "/nonexistent-prima-fuzz";

[[noreturn]] void fail(const char* reader, const std::string& what) {
  std::fprintf(stderr, "config_fuzz (%s): %s\n", reader, what.c_str());
  std::abort();
}

// An error must say what was wrong.
void check(const char* reader, const Status& st) {
  if (!st.ok() && st.message().empty()) fail(reader, "an error without a message");
}

// Runs `fn`; an exception escaping it is a crash: the readers return a Status (those that
// throw ConfigError are called through config::to_status, as their callers do).
template <typename Fn>
void guarded(const char* reader, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    fail(reader, std::string("exception escaped: ") + e.what());
  }
}

void read_as_json(const config::Json& j) {
  guarded("scenario", [&] {
    auto s = prima::scenario::parse_scenario(j, kFile, kBaseDir);
    check("scenario", s.status());
    if (!s.ok()) return;
    auto placed = prima::plan::place(s->plan, s->topology);
    check("scenario placement", placed.status());
    if (!placed.ok()) return;
    auto fit = prima::plan::check_plan(s->model, s->quantization, s->topology, s->plan, s->memory,
                                       s->scheduler.max_num_batched_tokens, s->max_model_len);
    check("scenario memory fit", fit.status());
  });
  guarded("plan", [&] { check("plan", prima::capacity::parse_plan(j, kFile, kBaseDir).status()); });
  guarded("topology", [&] {
    prima::plan::Topology t;
    Status st =
        config::to_status([&] { t = prima::plan::parse_topology(config::JsonReader(j, kFile)); });
    check("topology", st);
    if (st.ok()) check("topology validate", t.validate());
  });
  guarded("calibration", [&] {
    check("calibration", config::to_status([&] {
            (void)prima::perf::parse_calibration(config::JsonReader(j, kFile));
          }));
  });
}

void read_as_trace(const std::string& text) {
  guarded("jsonl trace", [&] {
    std::istringstream in(text);
    check("jsonl trace", prima::workload::parse_jsonl(in, "fuzz.jsonl").status());
  });
  guarded("azure csv trace", [&] {
    std::istringstream in(text);
    check("azure csv trace", prima::workload::parse_azure_csv(in, "fuzz.csv").status());
  });
}

void read_as_set_and_units(const std::string& text) {
  guarded("--set", [&] {
    static const std::string default_text(*config::embedded_file("scenarios/default.json"));
    auto j = config::parse_json_text(default_text, "default.json");
    if (!j.ok()) fail("--set", "the embedded default scenario does not parse");
    Status st = prima::scenario::apply_set(&*j, text);
    check("--set", st);
    if (st.ok())
      check("--set scenario", prima::scenario::parse_scenario(*j, kFile, kBaseDir).status());
  });
  guarded("units", [&] {
    double v = 0;
    (void)config::parse_duration_s(text, &v);
    (void)config::parse_bytes(text, &v);
    (void)config::parse_bandwidth_Bps(text, &v);
  });
}

bool names_a_device_file(const std::string& text) {
  for (const char* p : {"/dev", "/proc", "/sys"})
    if (text.find(p) != std::string::npos) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (names_a_device_file(text)) return 0;
  guarded("json", [&] {
    auto j = config::parse_json_text(text, kFile);
    check("json", j.status());
    if (j.ok()) read_as_json(*j);
  });
  read_as_trace(text);
  if (size <= 256) read_as_set_and_units(text);
  return 0;
}
