// Request parsing: each API's body becomes the engine's request (prompt length, max tokens,
// priority, SLA); every bad body gives a 400 (404 for an unknown model) naming the field.
#include "server/request_parse.h"

#include <gtest/gtest.h>

namespace prima::server {
namespace {

ModelInfo model() {
  ModelInfo m;
  m.name = "m";
  m.max_model_len = 1000;
  return m;
}

std::optional<ApiError> parse(ApiKind k, const std::string& body, ParsedRequest* p,
                              ParseLimits lim = {}) {
  return parse_request(k, body, model(), lim, p);
}

TEST(RequestParse, CompletionFieldsReachTheEngineRequest) {
  ParsedRequest p;
  auto e = parse(ApiKind::kCompletion,
                 R"({"model":"m","prompt":"abcdefghi","max_tokens":7,"stream":true,
                     "stream_options":{"include_usage":true},
                     "metadata":{"priority":"high","sla":"200ms"}})",
                 &p);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(p.gen.prompt_tokens, 3);  // ceil(9 / 4)
  EXPECT_EQ(p.gen.max_tokens, 7);
  EXPECT_TRUE(p.stream);
  EXPECT_TRUE(p.include_usage);
  EXPECT_EQ(p.gen.priority, Priority::kHigh);
  EXPECT_DOUBLE_EQ(p.gen.sla_s, 0.2);
}

TEST(RequestParse, TokenIdsCountAsThemselvesAndDefaultsApply) {
  ParsedRequest p;
  ParseLimits lim;
  lim.default_max_tokens = 20;
  ASSERT_FALSE(
      parse(ApiKind::kCompletion, R"({"model":"m","prompt":[5,6,7],"priority":2})", &p, lim));
  EXPECT_EQ(p.gen.prompt_tokens, 3);
  EXPECT_EQ(p.gen.prompt_ids, (std::vector<int>{5, 6, 7}));
  EXPECT_EQ(p.gen.max_tokens, 20);
  EXPECT_EQ(p.gen.priority, Priority::kLow);
  // The default is clipped to the context left after the prompt.
  ParsedRequest q;
  ASSERT_FALSE(parse(ApiKind::kCompletion,
                     R"({"model":"m","prompt":")" + std::string(3990, 'x') + R"("})", &q, lim));
  EXPECT_EQ(q.gen.max_tokens, 1000 - 998);
}

TEST(RequestParse, ErrorsNameTheField) {
  struct Case {
    ApiKind kind;
    std::string body;
    int status;
    std::string param, text;
  };
  const std::vector<Case> cases = {
      {ApiKind::kCompletion, "{oops", 400, "", "not valid JSON"},
      {ApiKind::kCompletion, "3", 400, "", "JSON object"},
      {ApiKind::kCompletion, R"({"model":3,"prompt":"x"})", 400, "model", "'model'"},
      {ApiKind::kCompletion, R"({"model":"other","prompt":"x"})", 404, "model", "other"},
      {ApiKind::kCompletion, R"({"model":"m"})", 400, "prompt", "'prompt'"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":{}})", 400, "prompt", "object"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":["a","b"]})", 400, "prompt", "batched"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","max_tokens":"5"})", 400, "max_tokens",
       "integer"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","max_tokens":1e400})", 400, "", "JSON"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","max_tokens":0})", 400, "max_tokens",
       "between 1 and 1000"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","max_tokens":1000})", 400, "max_tokens",
       "maximum context length is 1000"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","n":2})", 400, "n", "'n'"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","priority":"urgent"})", 400, "priority",
       "\"high\""},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","metadata":{"sla":true}})", 400,
       "metadata.sla", "duration"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","metadata":[]})", 400, "metadata",
       "object"},
      {ApiKind::kChat, R"({"model":"m","messages":[]})", 400, "messages", "empty"},
      {ApiKind::kChat, R"({"model":"m","messages":[{"role":"user","content":5}]})", 400,
       "messages[0].content", "string"},
      {ApiKind::kTgi, R"({"inputs":["x"]})", 400, "inputs", "string"},
      {ApiKind::kTgi, R"({"inputs":"x","parameters":{"max_new_tokens":-4}})", 400,
       "parameters.max_new_tokens", "between"},
      {ApiKind::kKServe, R"({"inputs":[{"name":"t","shape":[1],"datatype":"BYTES","data":[1]}]})",
       400, "inputs[0].data", "one string"},
      {ApiKind::kKServe, R"({"inputs":[]})", 400, "inputs", "exactly one"},
  };
  for (const auto& c : cases) {
    ParsedRequest p;
    auto e = parse(c.kind, c.body, &p);
    ASSERT_TRUE(e) << c.body;
    EXPECT_EQ(e->status, c.status) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body;
    EXPECT_NE(e->message.find(c.text), std::string::npos) << c.body << " -> " << e->message;
  }
}

// A hostile body: nesting far deeper than the stack could take is refused while parsing, on
// every API; a prompt nests at most one list deep; bytes that are not UTF-8 give a 400 whose
// error body can still be written.
TEST(RequestParse, DeepNestingAndBadBytesAreBadRequests) {
  const std::string deep = std::string(50000, '[') + "\"hello\"" + std::string(50000, ']');
  for (ApiKind k : {ApiKind::kCompletion, ApiKind::kChat, ApiKind::kTgi, ApiKind::kKServe}) {
    ParsedRequest p;
    auto e = parse(k, R"({"model":"m","prompt":)" + deep + "}", &p);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->status, 400);
    EXPECT_NE(e->message.find("deeper than 64 levels"), std::string::npos) << e->message;
  }
  struct Case {
    std::string prompt, param, text;
  };
  const std::vector<Case> prompts = {{R"([[["hello"]]])", "prompt[0]", "'prompt[0][0]' must be"},
                                     {R"([["hello"]])", "prompt[0]", "'prompt[0][0]' must be"},
                                     {R"([[1,[2]]])", "prompt[0]", "'prompt[0][1]' must be"},
                                     {R"([1,[2]])", "prompt", "batched"}};
  for (const auto& c : prompts) {
    ParsedRequest p;
    auto e = parse(ApiKind::kCompletion, R"({"model":"m","prompt":)" + c.prompt + "}", &p);
    ASSERT_TRUE(e) << c.prompt;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, c.param) << c.prompt;
    EXPECT_NE(e->message.find(c.text), std::string::npos) << c.prompt << " -> " << e->message;
  }
  for (const std::string ok : {R"(["hello"])", R"([[5,6,7]])", R"([5,6,7])"}) {
    ParsedRequest p;
    auto e = parse(ApiKind::kCompletion, R"({"model":"m","prompt":)" + ok + "}", &p);
    EXPECT_FALSE(e) << ok << " -> " << e->message;
  }
  ParsedRequest p;
  auto e = parse(ApiKind::kCompletion, "{\"model\":\"m\",\"prompt\":\"\xff\xc3(\"}", &p);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_NE(e->message.find("UTF-8"), std::string::npos) << e->message;
  for (ErrorStyle st : {ErrorStyle::kOpenAI, ErrorStyle::kTgi, ErrorStyle::kKServe})
    EXPECT_TRUE(nlohmann::json::accept(error_body(*e, st))) << error_body(*e, st);
}

TEST(RequestParse, KServeAndTgiBodies) {
  ParsedRequest p;
  ASSERT_FALSE(parse(ApiKind::kKServe,
                     R"({"inputs":[{"name":"text_input","shape":[1],"datatype":"BYTES",
                         "data":["12345678"]}],"parameters":{"max_tokens":3,"sla":0.5}})",
                     &p));
  EXPECT_EQ(p.gen.prompt_tokens, 2);
  EXPECT_EQ(p.gen.max_tokens, 3);
  EXPECT_DOUBLE_EQ(p.gen.sla_s, 0.5);
  ParsedRequest q;
  ASSERT_FALSE(parse(ApiKind::kTgi, R"({"inputs":"hi","parameters":{"max_new_tokens":128}})", &q));
  EXPECT_EQ(q.gen.max_tokens, 128);
  EXPECT_EQ(q.gen.prompt_tokens, 1);
}

// "sla" is read as config files read durations (config::parse_duration_s): a number of
// seconds or a string with a unit; never negative.
TEST(RequestParse, SlaDurations) {
  for (const auto& [sla, want] : std::vector<std::pair<std::string, double>>{{"\"200ms\"", 0.2},
                                                                             {"\"1.5s\"", 1.5},
                                                                             {"\"2m\"", 120},
                                                                             {"\"1h\"", 3600},
                                                                             {"0.5", 0.5}}) {
    ParsedRequest p;
    auto e = parse(ApiKind::kCompletion, R"({"model":"m","prompt":"x","sla":)" + sla + "}", &p);
    ASSERT_FALSE(e) << sla << " -> " << e->message;
    EXPECT_DOUBLE_EQ(p.gen.sla_s, want) << sla;
  }
  for (const std::string sla : {"\"soon\"", "\"-1s\"", "\"5 parsecs\"", "-1"}) {
    ParsedRequest p;
    auto e = parse(ApiKind::kCompletion, R"({"model":"m","prompt":"x","sla":)" + sla + "}", &p);
    ASSERT_TRUE(e) << sla;
    EXPECT_EQ(e->param, "sla") << sla;
    EXPECT_NE(e->message.find("'sla' must be a duration"), std::string::npos) << e->message;
  }
}

TEST(RequestParse, SamplingFieldsAndTheirDefaultsPerApi) {
  ParsedRequest p;
  ASSERT_FALSE(parse(ApiKind::kCompletion,
                     R"({"model":"m","prompt":"x","temperature":0.5,"top_p":0.9,"top_k":40,
                         "seed":-3,"stop":["\n","END"],"ignore_eos":true})",
                     &p));
  EXPECT_DOUBLE_EQ(p.gen.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(p.gen.sampling.top_p, 0.9);
  EXPECT_EQ(p.gen.sampling.top_k, 40);
  EXPECT_TRUE(p.gen.has_seed);
  EXPECT_EQ(p.gen.sampling.seed, static_cast<std::uint64_t>(-3));
  EXPECT_EQ(p.gen.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(p.gen.ignore_eos);
  ParsedRequest o;  // OpenAI samples at temperature 1 by default
  ASSERT_FALSE(parse(ApiKind::kChat,
                     R"({"model":"m","messages":[{"role":"user","content":"x"}],"stop":"."})", &o));
  EXPECT_DOUBLE_EQ(o.gen.sampling.temperature, 1.0);
  EXPECT_FALSE(o.gen.has_seed);
  EXPECT_EQ(o.gen.stop, std::vector<std::string>{"."});
  ParsedRequest t;  // TGI: greedy unless asked
  ASSERT_FALSE(parse(ApiKind::kTgi, R"({"inputs":"x","parameters":{"max_new_tokens":3}})", &t));
  EXPECT_DOUBLE_EQ(t.gen.sampling.temperature, 0.0);
  ParsedRequest t2;
  ASSERT_FALSE(
      parse(ApiKind::kTgi, R"({"inputs":"x","parameters":{"do_sample":true,"seed":4}})", &t2));
  EXPECT_DOUBLE_EQ(t2.gen.sampling.temperature, 1.0);
  EXPECT_EQ(t2.gen.sampling.seed, 4u);
  ParsedRequest k;  // KServe: greedy unless a temperature is given
  const std::string infer =
      R"({"inputs":[{"name":"t","shape":[1],"datatype":"BYTES","data":["x"]}],"parameters":)";
  ASSERT_FALSE(parse(ApiKind::kKServe, infer + R"({"top_k":5}})", &k));
  EXPECT_DOUBLE_EQ(k.gen.sampling.temperature, 0.0);
  ParsedRequest k2;
  ASSERT_FALSE(parse(ApiKind::kKServe, infer + R"({"temperature":0.7,"stop":"x"}})", &k2));
  EXPECT_DOUBLE_EQ(k2.gen.sampling.temperature, 0.7);
  EXPECT_EQ(k2.gen.stop, std::vector<std::string>{"x"});
}

TEST(RequestParse, BadSamplingFieldsNameTheField) {
  struct Bad {
    ApiKind kind;
    std::string body, param;
  };
  const std::vector<Bad> bad = {
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","temperature":-0.1})", "temperature"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","temperature":"hot"})", "temperature"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","top_p":0})", "top_p"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","top_p":1.5})", "top_p"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","top_k":-2})", "top_k"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","seed":1.5})", "seed"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","stop":[""]})", "stop"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","stop":[1]})", "stop[0]"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","stop":{}})", "stop"},
      {ApiKind::kCompletion, R"({"model":"m","prompt":"x","ignore_eos":1})", "ignore_eos"},
      {ApiKind::kTgi, R"({"inputs":"x","parameters":{"do_sample":"yes"}})", "parameters.do_sample"},
      {ApiKind::kTgi, R"({"inputs":"x","parameters":{"top_p":2}})", "parameters.top_p"},
  };
  for (const auto& b : bad) {
    ParsedRequest p;
    auto e = parse(b.kind, b.body, &p);
    ASSERT_TRUE(e) << b.body;
    EXPECT_EQ(e->status, 400) << b.body;
    EXPECT_EQ(e->param, b.param) << b.body << ": " << e->message;
  }
}

}  // namespace
}  // namespace prima::server
