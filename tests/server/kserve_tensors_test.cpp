// The served model's v2 tensors: the metadata and Triton config advertise text_input and
// text_output, and an inference request's tensors are checked against exactly those names
// (400 naming the tensor and the valid names), its shapes against its data, and its outputs'
// binary_data flags read.
#include "server/kserve_tensors.h"

#include <gtest/gtest.h>

namespace prima::server {
namespace {

using nlohmann::json;

json request(const json& input_name = "text_input") {
  return {{"inputs",
           json::array(
               {{{"name", input_name}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {"hi"}}}})}};
}

TEST(KServeTensors, MetadataAndConfigNameTheSameTensors) {
  const json md = kserve_model_metadata("m", "sim");
  EXPECT_EQ(md["name"], "m");
  EXPECT_EQ(md["versions"], json::array({"1"}));
  EXPECT_EQ(md["platform"], "prima-sim");
  EXPECT_EQ(md["inputs"][0]["name"], kTextInput);
  EXPECT_EQ(md["inputs"][0]["datatype"], "BYTES");
  EXPECT_EQ(md["outputs"][0]["name"], kTextOutput);
  const json cfg = kserve_model_config("m", "real", 2048);
  EXPECT_EQ(cfg["name"], "m");
  EXPECT_EQ(cfg["platform"], "prima-real");
  EXPECT_EQ(cfg["max_batch_size"], 0);
  ASSERT_EQ(cfg["input"].size(), 1u);
  EXPECT_EQ(cfg["input"][0]["name"], md["inputs"][0]["name"]);
  EXPECT_EQ(cfg["input"][0]["data_type"], "TYPE_STRING");
  EXPECT_EQ(cfg["input"][0]["dims"], md["inputs"][0]["shape"]);
  ASSERT_EQ(cfg["output"].size(), 1u);
  EXPECT_EQ(cfg["output"][0]["name"], md["outputs"][0]["name"]);
  EXPECT_EQ(cfg["parameters"]["max_model_len"]["string_value"], "2048");
}

TEST(KServeTensors, TheAdvertisedInputPassesAndOthersAreNamed) {
  json r = request();
  InferOutputs o;
  EXPECT_FALSE(check_infer_tensors(&r, &o));
  EXPECT_FALSE(o.binary);
  for (const json& name : {json("prompt"), json("TEXT_INPUT"), json(3), json(nullptr)}) {
    r = request(name);
    auto e = check_infer_tensors(&r, &o);
    ASSERT_TRUE(e) << name.dump();
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, "inputs[0].name");
    EXPECT_NE(e->message.find(R"(["text_input"])"), std::string::npos) << e->message;
  }
  r = request("prompt");
  EXPECT_NE(check_infer_tensors(&r, &o)->message.find("\"prompt\""), std::string::npos);
}

TEST(KServeTensors, ShapesMustHoldTheData) {
  InferOutputs o;
  for (const json& shape : {json{1, 1}, json{1}}) {
    json r = request();
    r["inputs"][0]["shape"] = shape;
    EXPECT_FALSE(check_infer_tensors(&r, &o)) << shape.dump();
  }
  for (const json& shape : {json{2}, json{0}, json{1, 3}, json{-1}, json{1.5}, json{"1"}}) {
    json r = request();
    r["inputs"][0]["shape"] = shape;
    auto e = check_infer_tensors(&r, &o);
    ASSERT_TRUE(e) << shape.dump();
    EXPECT_EQ(e->param, "inputs[0].shape");
  }
  // Huge dimensions do not overflow into a match.
  json r = request();
  r["inputs"][0]["shape"] = {1u << 31, 1u << 31, 1u << 31};
  EXPECT_TRUE(check_infer_tensors(&r, &o));
}

TEST(KServeTensors, OutputsNameTheAdvertisedOutputAndSayBinary) {
  InferOutputs o;
  json r = request();
  r["outputs"] = json::array({{{"name", "text_output"}, {"parameters", {{"binary_data", true}}}}});
  ASSERT_FALSE(check_infer_tensors(&r, &o));
  EXPECT_TRUE(o.binary);
  EXPECT_FALSE(r.contains("outputs"));  // consumed: the request parser does not see it

  r = request();
  r["outputs"] = json::array({{{"name", "logits"}}});
  auto e = check_infer_tensors(&r, &o);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "outputs[0].name");
  EXPECT_NE(e->message.find(R"(["text_output"])"), std::string::npos) << e->message;

  r = request();
  r["outputs"] = json::array({{{"name", "text_output"}}, {{"name", "text_output"}}});
  EXPECT_EQ(check_infer_tensors(&r, &o)->param, "outputs[1].name");

  r = request();
  r["outputs"] = {{"name", "text_output"}};  // an object, not a list
  EXPECT_EQ(check_infer_tensors(&r, &o)->param, "outputs");

  r = request();
  r["outputs"] = json::array({{{"name", "text_output"}, {"parameters", {{"binary_data", 1}}}}});
  EXPECT_EQ(check_infer_tensors(&r, &o)->param, "outputs[0].parameters.binary_data");
}

TEST(KServeTensors, BinaryDataOutputIsTheDefaultAnOutputMayOverride) {
  InferOutputs o;
  json r = request();
  r["parameters"] = {{"binary_data_output", true}, {"max_tokens", 4}};
  ASSERT_FALSE(check_infer_tensors(&r, &o));
  EXPECT_TRUE(o.binary);
  EXPECT_EQ(r["parameters"], json({{"max_tokens", 4}}));  // consumed

  r = request();
  r["parameters"] = {{"binary_data_output", true}};
  r["outputs"] = json::array({{{"name", "text_output"}, {"parameters", {{"binary_data", false}}}}});
  ASSERT_FALSE(check_infer_tensors(&r, &o));
  EXPECT_FALSE(o.binary);

  r = request();
  r["parameters"] = {{"binary_data_output", "yes"}};
  EXPECT_EQ(check_infer_tensors(&r, &o)->param, "parameters.binary_data_output");
}

TEST(KServeTensors, UnsupportedExtensionsAreRefusedByName) {
  InferOutputs o;
  json r = request();
  r["inputs"][0]["parameters"] = {{"shared_memory_region", "r0"}};
  EXPECT_EQ(check_infer_tensors(&r, &o)->param, "inputs[0].parameters.shared_memory_region");
  r = request();
  r["outputs"] = json::array({{{"name", "text_output"}, {"parameters", {{"classification", 3}}}}});
  EXPECT_EQ(check_infer_tensors(&r, &o)->param, "outputs[0].parameters.classification");
  r = request();
  r["outputs"] =
      json::array({{{"name", "text_output"}, {"parameters", {{"shared_memory_byte_size", 8}}}}});
  EXPECT_EQ(check_infer_tensors(&r, &o)->param, "outputs[0].parameters.shared_memory_byte_size");
}

}  // namespace
}  // namespace prima::server
