// `prima serve`'s options: the flags fill them with their defaults (the API key from
// $PRIMA_API_KEY when --api-key is not given); validate() refuses a flag of the other backend,
// the HTTP limits' bad values and each backend's own, naming the flag.
#include "cli/serve_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "cli/flags.h"
#include "tests/cli/options_test_util.h"

namespace prima::cli {
namespace {

ServeOptions parsed(const Args& args) {
  boost::program_options::variables_map vm;
  std::string error;
  EXPECT_TRUE(parse_flags(args, serve_flags(), &vm, &error)) << error;
  return serve_options(vm);
}

Status checked(const Args& args) {
  return parsed(args).validate();
}

TEST(ServeOptions, FlagsFillTheOptions) {
  ::unsetenv("PRIMA_API_KEY");
  const ServeOptions d = parsed({});
  ASSERT_TRUE(d.validate().ok()) << d.validate().message();
  EXPECT_EQ(d.backend, "sim");
  EXPECT_EQ(d.http.host, "127.0.0.1");
  EXPECT_EQ(d.http.port, 8000);
  EXPECT_EQ(d.http.max_concurrent, 256);
  EXPECT_EQ(d.http.max_body_bytes, std::size_t{1} << 20);
  EXPECT_DOUBLE_EQ(d.drain_timeout_s, 30);
  EXPECT_DOUBLE_EQ(d.speed, 1.0);
  EXPECT_EQ(d.max_num_seqs, 8);
  EXPECT_TRUE(d.given.empty());  // defaults are not "given"
  EXPECT_TRUE(d.http.api_key.empty());

  const ServeOptions r = parsed({"--backend",
                                 "real",
                                 "--model",
                                 "m.gguf",
                                 "--tp",
                                 "2",
                                 "--max-num-seqs",
                                 "4",
                                 "--no-repack",
                                 "--port",
                                 "0",
                                 "--api-key",
                                 "k",
                                 "--served-model-name",
                                 "smol",
                                 "smol-2",
                                 "--comm-timeout",
                                 "2.5",
                                 "--max-num-batched-tokens",
                                 "64"});
  ASSERT_TRUE(r.validate().ok()) << r.validate().message();
  EXPECT_EQ(r.model_path, "m.gguf");
  EXPECT_EQ(r.tp, 2);
  EXPECT_EQ(r.max_num_seqs, 4);
  EXPECT_TRUE(r.no_repack && !r.repack);
  EXPECT_EQ(r.http.port, 0);
  EXPECT_EQ(r.http.api_key, "k");
  EXPECT_EQ(r.served_names, (std::vector<std::string>{"smol", "smol-2"}));
  EXPECT_EQ(r.max_num_batched_tokens, 64);
  server::ModelInfo m;
  m.name = "file-name";
  apply_served_names(r, &m);
  EXPECT_EQ(m.name, "smol");
  EXPECT_EQ(m.aliases, (std::vector<std::string>{"smol-2"}));
  EXPECT_DOUBLE_EQ(r.comm_timeout_s, 2.5);
  EXPECT_TRUE(r.given.count("tp") && r.given.count("no-repack") && !r.given.count("pp"));

  const ServeOptions s =
      parsed({"--scenario", "s.json", "--set", "a=1", "--set", "b=2", "--speed", "20"});
  ASSERT_TRUE(s.validate().ok()) << s.validate().message();
  EXPECT_EQ(s.scenario_path, "s.json");
  EXPECT_EQ(s.sets, (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_DOUBLE_EQ(s.speed, 20);
}

TEST(ServeOptions, ApiKeyComesFromTheEnvironmentWhenNotGiven) {
  ::setenv("PRIMA_API_KEY", "from-env", 1);
  EXPECT_EQ(parsed({}).http.api_key, "from-env");
  EXPECT_EQ(parsed({"--api-key", "flag"}).http.api_key, "flag");
  ::unsetenv("PRIMA_API_KEY");
}

TEST(ServeOptions, FlagsOfTheOtherBackendAreRefused) {
  struct Case {
    Args args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"--backend", "gpu"}, "--backend gpu: must be 'sim' or 'real'"},
      {{"--backend", "real", "--model", "m", "--scenario", "s.json"},
       "--scenario applies to --backend sim only"},
      {{"--backend", "real", "--model", "m", "--set", "a=1"},
       "--set applies to --backend sim only"},
      {{"--backend", "real", "--model", "m", "--speed", "2"},
       "--speed applies to --backend sim only"},
      {{"--model", "m.gguf"}, "--model applies to --backend real only"},
      {{"--tp", "2"}, "--tp applies to --backend real only"},
      {{"--no-repack"}, "--no-repack applies to --backend real only"},
      {{"--comm-timeout", "5"}, "--comm-timeout applies to --backend real only"},
      {{"--max-num-batched-tokens", "5"},
       "--max-num-batched-tokens applies to --backend real only"},
      {{"--backend", "real", "--model", "m", "--repack", "--no-repack"},
       "--repack and --no-repack exclude each other"},
      {{"--backend", "real"}, "--backend real needs --model FILE.gguf"},
  };
  for (const auto& c : cases) {
    EXPECT_TRUE(refused(checked(c.args), c.want));
  }
}

TEST(ServeOptions, EachBadValueNamesTheFlag) {
  struct Case {
    std::string backend;
    std::function<void(ServeOptions*)> set;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"sim", [](ServeOptions* o) { o->drain_timeout_s = -1; }, "--drain-timeout: -1 must be >= 0"},
      {"sim", [](ServeOptions* o) { o->http.port = 70000; }, "--port: 70000 is not a TCP port"},
      {"sim", [](ServeOptions* o) { o->http.max_concurrent = 0; }, "--max-concurrent: 0"},
      {"sim", [](ServeOptions* o) { o->speed = 0; }, "--speed: 0 must be a positive number"},
      {"sim", [](ServeOptions* o) { o->served_names = {""}; }, "--served-model-name"},
      {"sim", [](ServeOptions* o) { o->http.allowed_origins = {"example.com"}; },
       "--allowed-origins: 'example.com' must be *"},
      {"real", [](ServeOptions* o) { o->max_num_batched_tokens = -1; }, "--max-num-batched-tokens"},
      {"real", [](ServeOptions* o) { o->max_num_seqs = 0; }, "--max-num-seqs must be >= 1"},
      {"real", [](ServeOptions* o) { o->max_model_len = -1; }, "--max-model-len"},
      {"real", [](ServeOptions* o) { o->kernel_threads = -1; }, "--kernel-threads >= 0"},
      {"real", [](ServeOptions* o) { o->comm_timeout_s = 0; }, "--comm-timeout must be > 0, got 0"},
  };
  for (const auto& c : cases) {
    ServeOptions o;
    o.backend = c.backend;
    if (c.backend == "real") o.model_path = "m.gguf";
    ASSERT_TRUE(o.validate().ok()) << o.validate().message();
    c.set(&o);
    EXPECT_TRUE(refused(o.validate(), c.want));
  }
}

}  // namespace
}  // namespace prima::cli
