// Fields beyond the basics (request_fields.h): log-probabilities, echo, penalties and
// logit_bias reach the engine request; TGI's details options and truncate; every field not
// implemented is a 400 naming it and saying what would be valid; unknown fields are refused.
#include "server/request_fields.h"

#include <gtest/gtest.h>

#include "server/text_codec.h"

namespace prima::server {
namespace {

// The synthetic codec with a 10-token vocabulary (logit_bias ids are checked against it).
class TenTokens : public SyntheticCodec {
 public:
  int vocab_size() const override { return 10; }
};

ModelInfo model(const TextCodec* codec = nullptr) {
  ModelInfo m;
  m.name = "m";
  m.max_model_len = 1000;
  m.codec = codec;
  return m;
}

std::optional<ApiError> parse(ApiKind k, const std::string& body, ParsedRequest* p,
                              const TextCodec* codec = nullptr) {
  return parse_request(k, body, model(codec), {}, p);
}

const std::string kChat = R"({"model":"m","messages":[{"role":"user","content":"x"}])";
const std::string kCompl = R"({"model":"m","prompt":"abcdefgh")";

TEST(RequestFields, LogprobsReachTheSamplingParams) {
  ParsedRequest a;
  ASSERT_FALSE(parse(ApiKind::kCompletion, kCompl + R"(,"logprobs":3})", &a));
  EXPECT_EQ(a.gen.sampling.logprobs, 3);
  ParsedRequest none;
  ASSERT_FALSE(parse(ApiKind::kCompletion, kCompl + "}", &none));
  EXPECT_EQ(none.gen.sampling.logprobs, -1);
  ParsedRequest c;
  ASSERT_FALSE(parse(ApiKind::kChat, kChat + R"(,"logprobs":true,"top_logprobs":20})", &c));
  EXPECT_EQ(c.gen.sampling.logprobs, 20);
  ParsedRequest c0;
  ASSERT_FALSE(parse(ApiKind::kChat, kChat + R"(,"logprobs":true})", &c0));
  EXPECT_EQ(c0.gen.sampling.logprobs, 0);
  ParsedRequest off;
  ASSERT_FALSE(parse(ApiKind::kChat, kChat + R"(,"logprobs":false})", &off));
  EXPECT_EQ(off.gen.sampling.logprobs, -1);
}

TEST(RequestFields, EchoKeepsThePromptText) {
  ParsedRequest p;
  ASSERT_FALSE(parse(ApiKind::kCompletion, kCompl + R"(,"echo":true})", &p));
  EXPECT_TRUE(p.echo);
  EXPECT_EQ(p.prompt_text, "abcdefgh");
}

TEST(RequestFields, PenaltiesAndLogitBiasReachTheSamplingParams) {
  TenTokens ten;
  ParsedRequest p;
  ASSERT_FALSE(parse(ApiKind::kCompletion,
                     kCompl + R"(,"presence_penalty":-2,"frequency_penalty":1.5,
                     "repetition_penalty":1.2,"logit_bias":{"9":-100,"3":2.5}})",
                     &p, &ten));
  EXPECT_DOUBLE_EQ(p.gen.sampling.presence_penalty, -2);
  EXPECT_DOUBLE_EQ(p.gen.sampling.frequency_penalty, 1.5);
  EXPECT_DOUBLE_EQ(p.gen.sampling.repetition_penalty, 1.2);
  EXPECT_EQ(p.gen.sampling.logit_bias,
            (std::vector<std::pair<int, float>>{{3, 2.5f}, {9, -100.f}}));
  ParsedRequest t;  // TGI: repetition_penalty and frequency_penalty in "parameters"
  ASSERT_FALSE(parse(ApiKind::kTgi,
                     R"({"inputs":"x","parameters":{"repetition_penalty":1.1,
                         "frequency_penalty":0.5}})",
                     &t));
  EXPECT_DOUBLE_EQ(t.gen.sampling.repetition_penalty, 1.1);
  EXPECT_DOUBLE_EQ(t.gen.sampling.frequency_penalty, 0.5);
  ParsedRequest k;  // KServe parameters too
  ASSERT_FALSE(parse(ApiKind::kKServe,
                     R"({"inputs":[{"name":"t","shape":[1],"datatype":"BYTES","data":["x"]}],
                         "parameters":{"presence_penalty":0.5}})",
                     &k));
  EXPECT_DOUBLE_EQ(k.gen.sampling.presence_penalty, 0.5);
}

TEST(RequestFields, TgiDetailsOptionsAndTruncate) {
  ParsedRequest p;
  ASSERT_FALSE(parse(ApiKind::kTgi,
                     R"({"inputs":"abcdefghijkl","parameters":{"details":true,
                         "decoder_input_details":true,"top_n_tokens":2,
                         "return_full_text":true,"truncate":2,"best_of":1,"watermark":false}})",
                     &p));
  EXPECT_TRUE(p.details);
  EXPECT_TRUE(p.decoder_input_details);
  EXPECT_TRUE(p.return_full_text);
  EXPECT_EQ(p.top_n_tokens, 2);
  EXPECT_EQ(p.gen.sampling.logprobs, 2);
  EXPECT_EQ(p.prompt_text, "abcdefghijkl");
  EXPECT_EQ(p.gen.prompt_tokens, 2);  // 3 tokens (12 bytes / 4), the last 2 kept
  ParsedRequest ids;                  // token ids (a real tokenizer's) keep the last N
  GenRequest g;
  g.prompt_ids = {1, 2, 3, 4};
  g.prompt_tokens = 4;
  ids.gen = g;
  const nlohmann::json params{{"truncate", 3}};
  ASSERT_NO_THROW(
      parse_tgi_fields(config::JsonReader::request_body(params, "parameters"), model(), &ids));
  EXPECT_EQ(ids.gen.prompt_ids, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(ids.gen.prompt_tokens, 3);
  ParsedRequest ty;  // typical_p is a sampling field: TGI samples (at temperature 1)
  ASSERT_FALSE(parse(ApiKind::kTgi, R"({"inputs":"x","parameters":{"typical_p":0.9}})", &ty));
  EXPECT_DOUBLE_EQ(ty.gen.sampling.typical_p, 0.9);
  EXPECT_DOUBLE_EQ(ty.gen.sampling.temperature, 1.0);
  ParsedRequest ty2;
  ASSERT_FALSE(parse(ApiKind::kTgi,
                     R"({"inputs":"x","parameters":{"typical_p":0.9,"temperature":0.5}})", &ty2));
  EXPECT_DOUBLE_EQ(ty2.gen.sampling.temperature, 0.5);
  ParsedRequest d;  // TGI reports each token's logprob: asked for even without details
  ASSERT_FALSE(parse(ApiKind::kTgi, R"({"inputs":"x"})", &d));
  EXPECT_EQ(d.gen.sampling.logprobs, 0);
}

TEST(RequestFields, RefusedAndInvalidFieldsNameTheFieldAndWhatIsValid) {
  TenTokens ten;
  struct Case {
    ApiKind kind;
    std::string body, param, text;
  };
  const std::string tgi = R"({"inputs":"x","parameters":)";
  const std::vector<Case> cases = {
      {ApiKind::kCompletion, kCompl + R"(,"logprobs":6})", "logprobs", "from 0 to 5"},
      {ApiKind::kCompletion, kCompl + R"(,"logprobs":true})", "logprobs", "integer"},
      {ApiKind::kCompletion, kCompl + R"(,"echo":"yes"})", "echo", "boolean"},
      {ApiKind::kCompletion, kCompl + R"(,"best_of":2})", "best_of", "must be 1"},
      {ApiKind::kCompletion, kCompl + R"(,"suffix":"end"})", "suffix", "not supported"},
      {ApiKind::kCompletion, kCompl + R"(,"presence_penalty":2.5})", "presence_penalty",
       "between -2 and 2"},
      {ApiKind::kCompletion, kCompl + R"(,"frequency_penalty":"x"})", "frequency_penalty",
       "number"},
      {ApiKind::kCompletion, kCompl + R"(,"repetition_penalty":0})", "repetition_penalty", "> 0"},
      {ApiKind::kCompletion, kCompl + R"(,"logit_bias":[1]})", "logit_bias", "object"},
      {ApiKind::kCompletion, kCompl + R"(,"logit_bias":{"abc":1}})", "logit_bias.abc", "token ids"},
      {ApiKind::kCompletion, kCompl + R"(,"logit_bias":{"-1":1}})", "logit_bias.-1", "token ids"},
      {ApiKind::kCompletion, kCompl + R"(,"logit_bias":{"10":1}})", "logit_bias.10", "0..9"},
      {ApiKind::kCompletion, kCompl + R"(,"logit_bias":{"1":101}})", "logit_bias.1",
       "between -100 and 100"},
      {ApiKind::kCompletion, kCompl + R"(,"min_tokens":17})", "min_tokens", "at most"},
      {ApiKind::kCompletion, kCompl + R"(,"min_tokens":-1})", "min_tokens", "from 0"},
      {ApiKind::kCompletion, kCompl + R"(,"min_p":1.5})", "min_p", "between 0 and 1"},
      {ApiKind::kCompletion, kCompl + R"(,"stop_token_ids":[3,12]})", "stop_token_ids[1]", "0..9"},
      {ApiKind::kCompletion, kCompl + R"(,"stop_token_ids":[-3]})", "stop_token_ids[0]",
       "token id"},
      {ApiKind::kCompletion, kCompl + R"(,"stop_token_ids":7})", "stop_token_ids", "list"},
      {ApiKind::kCompletion, kCompl + R"(,"skip_special_tokens":1})", "skip_special_tokens",
       "boolean"},
      {ApiKind::kCompletion, kCompl + R"(,"store":true})", "store", "does not store"},
      {ApiKind::kCompletion, kCompl + R"(,"max_tokens":0})", "max_tokens", "'echo': true"},
      {ApiKind::kCompletion, kCompl + R"(,"stream_options":{"include_usage":true}})",
       "stream_options", "'stream': true"},
      {ApiKind::kCompletion, kCompl + R"(,"stream":true,"stream_options":{"usage":true}})",
       "stream_options.usage", "not a field"},
      {ApiKind::kChat, kChat + R"(,"chat_template_kwargs":{"enable_thinking":true}})",
       "chat_template_kwargs.enable_thinking", "not a variable"},
      {ApiKind::kChat, kChat + R"(,"continue_final_message":true})", "continue_final_message",
       "add_generation_prompt"},
      {ApiKind::kChat,
       R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})",
       "messages[0].content[0].type", "reads text only"},
      {ApiKind::kChat, R"({"model":"m","messages":[{"role":"user","content":"x","extra":1}]})",
       "messages[0].extra", "not a field"},
      {ApiKind::kChat, R"({"model":"m","messages":[{"role":"tool","content":"x"}]})",
       "messages[0].role", "tool calling"},
      {ApiKind::kChat, R"({"model":"m","messages":[{"role":"robot","content":"x"}]})",
       "messages[0].role", "\"assistant\""},
      {ApiKind::kChat, kChat + R"(,"top_logprobs":2})", "top_logprobs", "'logprobs': true"},
      {ApiKind::kChat, kChat + R"(,"logprobs":true,"top_logprobs":21})", "top_logprobs",
       "from 0 to 20"},
      {ApiKind::kChat, kChat + R"(,"logprobs":1})", "logprobs", "boolean"},
      {ApiKind::kChat, kChat + R"(,"tools":[{"type":"function","function":{"name":"f"}}]})",
       "tools", "no tool-calling template"},
      {ApiKind::kChat, kChat + R"(,"tool_choice":"auto"})", "tool_choice", "\"none\""},
      {ApiKind::kChat, kChat + R"(,"functions":[{"name":"f"}]})", "functions", "tool-calling"},
      {ApiKind::kChat, kChat + R"(,"response_format":{"type":"json_object"}})", "response_format",
       "{\"type\": \"text\"}"},
      {ApiKind::kTgi, tgi + R"({"best_of":2}})", "parameters.best_of", "must be 1"},
      {ApiKind::kTgi, tgi + R"({"watermark":true}})", "parameters.watermark", "send false"},
      {ApiKind::kTgi, tgi + R"({"typical_p":1.5}})", "parameters.typical_p", "<= 1"},
      {ApiKind::kTgi, tgi + R"({"typical_p":0}})", "parameters.typical_p", "> 0"},
      {ApiKind::kTgi, tgi + R"({"grammar":{"type":"json","value":{}}}})", "parameters.grammar",
       "not implemented"},
      {ApiKind::kTgi, tgi + R"({"top_n_tokens":21}})", "parameters.top_n_tokens", "0 to 20"},
      {ApiKind::kTgi, tgi + R"({"truncate":0}})", "parameters.truncate", "from 1"},
      {ApiKind::kTgi, tgi + R"({"repetition_penalty":-1}})", "parameters.repetition_penalty",
       "> 0"},
      {ApiKind::kTgi, tgi + R"({"details":"yes"}})", "parameters.details", "boolean"},
      {ApiKind::kTgi, tgi + R"({"presence_penalty":1}})", "parameters.presence_penalty",
       "not a field"},
      {ApiKind::kTgi, R"({"inputs":"x","options":{}})", "options", "not a field"},
  };
  for (const auto& c : cases) {
    ParsedRequest p;
    auto e = parse(c.kind, c.body, &p, &ten);
    ASSERT_TRUE(e) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body << " -> " << e->message;
    EXPECT_NE(e->message.find(c.text), std::string::npos) << c.body << " -> " << e->message;
  }
}

TEST(RequestFields, HarmlessValuesOfRefusedFieldsAreAccepted) {
  const std::vector<std::string> ok = {
      kChat + R"(,"tools":[],"tool_choice":"none","parallel_tool_calls":false})",
      kChat + R"(,"response_format":{"type":"text"},"user":"u1"})",
  };
  for (const auto& b : ok) {
    ParsedRequest p;
    auto e = parse(ApiKind::kChat, b, &p);
    EXPECT_FALSE(e) << b << " -> " << e->message;
  }
  ParsedRequest c;
  auto e = parse(ApiKind::kCompletion, kCompl + R"(,"best_of":1,"suffix":"","echo":false})", &c);
  EXPECT_FALSE(e) << e->message;
}

TEST(RequestFields, VllmExtrasReachTheEngineRequest) {
  TenTokens ten;
  ParsedRequest p;
  auto e =
      parse(ApiKind::kCompletion, kCompl + R"(,"min_p":0.1,"min_tokens":4,"stop_token_ids":[2,9],
                   "skip_special_tokens":false,"include_stop_str_in_output":true,"store":false})",
            &p, &ten);
  ASSERT_FALSE(e) << e->message;
  EXPECT_DOUBLE_EQ(p.gen.sampling.min_p, 0.1);
  EXPECT_EQ(p.gen.min_tokens, 4);
  EXPECT_EQ(p.gen.stop_token_ids, (std::vector<int>{2, 9}));
  EXPECT_FALSE(p.gen.skip_special_tokens);
  EXPECT_TRUE(p.gen.include_stop_str);
  // Scoring: echo with logprobs scores the prompt; max_tokens 0 generates nothing reported.
  ParsedRequest s;
  ASSERT_FALSE(
      parse(ApiKind::kCompletion, kCompl + R"(,"echo":true,"logprobs":2,"max_tokens":0})", &s));
  EXPECT_EQ(s.gen.sampling.prompt_logprobs, 2);
  EXPECT_TRUE(s.score_only);
  EXPECT_EQ(s.gen.max_tokens, 1);
  // TGI's prefill logprobs; its stop sequences stay in the text.
  ParsedRequest t;
  ASSERT_FALSE(
      parse(ApiKind::kTgi, R"({"inputs":"x","parameters":{"decoder_input_details":true}})", &t));
  EXPECT_EQ(t.gen.sampling.prompt_logprobs, 0);
  EXPECT_TRUE(t.gen.include_stop_str);
}

TEST(RequestFields, ChatRenderingFieldsAndEcho) {
  ParsedRequest p;
  auto e = parse(ApiKind::kChat,
                 R"({"model":"m","messages":[{"role":"developer","content":"be brief"},
                     {"role":"user","content":[{"type":"text","text":"hi"}]},
                     {"role":"assistant","content":"Hello"}],
                     "add_generation_prompt":false,"continue_final_message":true,"echo":true,
                     "chat_template_kwargs":{"add_generation_prompt":false}})",
                 &p);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(p.chat_echo, "Hello");
  ParsedRequest q;  // echo without a final assistant message: nothing to continue
  ASSERT_FALSE(parse(ApiKind::kChat, kChat + R"(,"echo":true})", &q));
  EXPECT_EQ(q.chat_echo, "");
}

TEST(RequestFields, ModelNamesAliasesAndPlaceholders) {
  ModelInfo m = model();
  m.aliases = {"alias"};
  for (const char* name : {"m", "alias", "tgi", "dummy"}) {
    ParsedRequest p;
    auto e = parse_request(
        ApiKind::kChat,
        std::string(R"({"model":")") + name + R"(","messages":[{"role":"user","content":"x"}]})", m,
        {}, &p);
    ASSERT_FALSE(e) << name << ": " << e->message;
    // A served name is echoed as sent; a placeholder is answered with the model's name.
    EXPECT_EQ(p.model, std::string(name) == "alias" ? "alias" : "m") << name;
  }
  ParsedRequest none;
  ASSERT_FALSE(parse_request(ApiKind::kCompletion, R"({"prompt":"x"})", m, {}, &none));
  EXPECT_EQ(none.model, "m");
  ParsedRequest other;
  auto e = parse_request(ApiKind::kCompletion, R"({"model":"gpt-4","prompt":"x"})", m, {}, &other);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 404);
}

TEST(RequestFields, ResponsesApiInputAndRefusals) {
  ParsedRequest p;
  auto e = parse(ApiKind::kResponses,
                 R"({"model":"m","instructions":"be brief","max_output_tokens":5,
                     "input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},
                              {"type":"message","role":"assistant","content":[{"type":"output_text","text":"yo"}]},
                              {"role":"user","content":"again"}],
                     "temperature":0,"stream":true,"store":false,"text":{"format":{"type":"text"}}})",
                 &p);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(p.gen.max_tokens, 5);
  EXPECT_TRUE(p.stream);
  EXPECT_EQ(p.gen.sampling.temperature, 0);
  const std::string m = R"({"model":"m","input":"hi",)";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {m + R"("tools":[{"type":"web_search"}]})", "tools"},
      {m + R"("store":true})", "store"},
      {m + R"("previous_response_id":"resp_1"})", "previous_response_id"},
      {m + R"("reasoning":{"effort":"low"}})", "reasoning"},
      {m + R"("text":{"format":{"type":"json_schema"}}})", "text.format.type"},
      {m + R"("frequency":1})", "frequency"},
      {R"({"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"x"}]})",
       "input[0].type"},
      {R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]})",
       "input[0].content[0].type"},
      {R"({"model":"m","input":[]})", "input"},
  };
  for (const auto& [body, param] : refused) {
    ParsedRequest q;
    auto err = parse(ApiKind::kResponses, body, &q);
    ASSERT_TRUE(err) << body;
    EXPECT_EQ(err->status, 400) << body;
    EXPECT_EQ(err->param, param) << body << " -> " << err->message;
  }
}

}  // namespace
}  // namespace prima::server
