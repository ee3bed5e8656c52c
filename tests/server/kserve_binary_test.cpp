// The v2 binary tensor data extension: splitting a body at Inference-Header-Content-Length,
// BYTES elements (4-byte little-endian length + bytes) both ways, inputs' binary data moved
// into "data", and binary outputs; every malformed body is a 400 naming what is wrong, and
// nothing reads past the body.
#include "server/kserve_binary.h"

#include <gtest/gtest.h>

namespace prima::server {
namespace {

using nlohmann::json;

// A BYTES element as tritonclient's serialize_byte_tensor writes it.
std::string element(const std::string& s) {
  std::string out(4, '\0');
  const auto n = static_cast<std::uint32_t>(s.size());
  for (int b = 0; b < 4; ++b) out[b] = static_cast<char>((n >> (8 * b)) & 0xff);
  return out + s;
}

json header_with_binary_input(std::size_t size) {
  return json{{"inputs", json::array({{{"name", "text_input"},
                                       {"datatype", "BYTES"},
                                       {"shape", {1}},
                                       {"parameters", {{"binary_data_size", size}}}}})}};
}

TEST(KServeBinary, SplitsTheBodyAtTheHeaderLength) {
  const std::string body = R"({"a":1})" + std::string("\x01\x02", 2);
  BinaryBody parts;
  ASSERT_FALSE(split_binary_body(body, "7", &parts));
  EXPECT_EQ(parts.json, R"({"a":1})");
  EXPECT_EQ(parts.binary, std::string("\x01\x02", 2));
  ASSERT_FALSE(split_binary_body(body, std::to_string(body.size()), &parts));
  EXPECT_TRUE(parts.binary.empty());
}

TEST(KServeBinary, AHeaderLengthThatIsNotACountOrBeyondTheBodyIsRefused) {
  BinaryBody parts;
  for (const char* bad : {"", "abc", "-1", "1e3", " 7", "12345678901234567890", "0"}) {
    auto e = split_binary_body("{}", bad, &parts);
    ASSERT_TRUE(e) << "'" << bad << "'";
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, kInferHeaderLength);
  }
  auto e = split_binary_body("{}", "3", &parts);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("3 bytes"), std::string::npos) << e->message;
  EXPECT_NE(e->message.find("only 2 bytes"), std::string::npos) << e->message;
}

TEST(KServeBinary, BytesElementsRoundTrip) {
  const std::vector<std::string> in = {"hello", "", std::string("a\0b", 3), std::string(300, 'x')};
  const std::string raw = encode_bytes_elements(in);
  EXPECT_EQ(raw.size(), 4 * in.size() + 5 + 0 + 3 + 300);
  EXPECT_EQ(raw.substr(0, 9), element("hello"));
  EXPECT_EQ(raw.substr(9, 4), std::string(4, '\0'));  // the empty element: its length only
  EXPECT_EQ(raw.substr(13, 7), std::string("\x03\0\0\0a\0b", 7));
  std::vector<std::string> out;
  ASSERT_FALSE(decode_bytes_elements(raw, "inputs[0]", &out));
  EXPECT_EQ(out, in);
  // 300 = 0x012c: little-endian length bytes.
  EXPECT_EQ(raw.substr(20, 4), std::string("\x2c\x01\0\0", 4));
}

TEST(KServeBinary, TruncatedBytesElementsAreRefusedWithoutReadingPastTheData) {
  std::vector<std::string> out;
  // Fewer than 4 bytes for the second element's length.
  auto e = decode_bytes_elements(element("ab") + std::string("\x01\0", 2), "inputs[0]", &out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "inputs[0]");
  EXPECT_NE(e->message.find("element 1 is truncated"), std::string::npos) << e->message;
  // A length beyond the data (the data sits inside a larger buffer: nothing past the view is
  // read).
  const std::string buffer = element("abcdef") + "TRAILING";
  out.clear();
  e = decode_bytes_elements(std::string_view(buffer).substr(0, 7), "inputs[0]", &out);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("6 bytes long, but only 3"), std::string::npos) << e->message;
  // A length of 2^32 - 1.
  out.clear();
  e = decode_bytes_elements(std::string("\xff\xff\xff\xff", 4), "inputs[0]", &out);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("4294967295 bytes long"), std::string::npos) << e->message;
}

TEST(KServeBinary, BinaryInputsBecomeTheirData) {
  const std::string raw = element("Hello there");
  json req = header_with_binary_input(raw.size());
  req["inputs"][0]["parameters"]["other"] = 1;
  ASSERT_FALSE(inline_binary_inputs(&req, raw));
  const json& t = req["inputs"][0];
  EXPECT_EQ(t["data"], json::array({"Hello there"}));
  EXPECT_FALSE(t["parameters"].contains("binary_data_size"));
  EXPECT_EQ(t["parameters"]["other"], 1);
  // Without other parameters the emptied "parameters" goes too.
  req = header_with_binary_input(raw.size());
  ASSERT_FALSE(inline_binary_inputs(&req, raw));
  EXPECT_FALSE(req["inputs"][0].contains("parameters"));
}

TEST(KServeBinary, InputsTakeTheirBytesInOrder) {
  json req = header_with_binary_input(0);
  req["inputs"].push_back(req["inputs"][0]);
  req["inputs"].push_back(req["inputs"][0]);
  req["inputs"][0]["parameters"]["binary_data_size"] = 5;  // element("a")
  req["inputs"][1] = {{"name", "x"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {"json"}}};
  req["inputs"][2]["parameters"]["binary_data_size"] = 6;  // element("bc")
  ASSERT_FALSE(inline_binary_inputs(&req, element("a") + element("bc")));
  EXPECT_EQ(req["inputs"][0]["data"], json::array({"a"}));
  EXPECT_EQ(req["inputs"][1]["data"], json::array({"json"}));
  EXPECT_EQ(req["inputs"][2]["data"], json::array({"bc"}));
}

TEST(KServeBinary, SizesThatDoNotAddUpAreRefused) {
  const std::string raw = element("abc");
  // More than is there.
  json req = header_with_binary_input(raw.size() + 1);
  auto e = inline_binary_inputs(&req, raw);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "inputs[0].parameters.binary_data_size");
  // Bytes left over.
  req = header_with_binary_input(raw.size());
  e = inline_binary_inputs(&req, raw + "zz");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, kInferHeaderLength);
  EXPECT_NE(e->message.find("9 bytes follow"), std::string::npos) << e->message;
  // Binary bytes but no input claims them.
  req = json{{"inputs", json::array({{{"name", "text_input"}, {"data", {"x"}}}})}};
  EXPECT_TRUE(inline_binary_inputs(&req, raw));
  // A size the element inside does not fill: truncated element.
  req = header_with_binary_input(raw.size() - 1);
  e = inline_binary_inputs(&req, raw.substr(0, raw.size() - 1));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "inputs[0]");
  // A binary_data_size without any binary data names the header it needs.
  req = header_with_binary_input(4);
  e = inline_binary_inputs(&req, "");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("Inference-Header-Content-Length"), std::string::npos) << e->message;
}

TEST(KServeBinary, BadBinaryInputDeclarationsAreRefused) {
  const std::string raw = element("abc");
  for (const json& size : {json(-1), json(1.5), json("7"), json::array({7})}) {
    json req = header_with_binary_input(0);
    req["inputs"][0]["parameters"]["binary_data_size"] = size;
    auto e = inline_binary_inputs(&req, raw);
    ASSERT_TRUE(e) << size.dump();
    EXPECT_EQ(e->param, "inputs[0].parameters.binary_data_size");
  }
  json req = header_with_binary_input(raw.size());
  req["inputs"][0]["data"] = {"also"};
  auto e = inline_binary_inputs(&req, raw);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "inputs[0].data");
  req = header_with_binary_input(raw.size());
  req["inputs"][0]["datatype"] = "INT32";
  e = inline_binary_inputs(&req, raw);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "inputs[0].datatype");
  // Text must be UTF-8: JSON cannot carry anything else to the request parser.
  const std::string bad = element("\xff\xfe");
  req = header_with_binary_input(bad.size());
  e = inline_binary_inputs(&req, bad);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("not valid UTF-8"), std::string::npos) << e->message;
}

TEST(KServeBinary, BinaryOutputsFollowTheJsonHeader) {
  json answer{{"id", "7"},
              {"outputs", json::array({{{"name", "text_output"},
                                        {"datatype", "BYTES"},
                                        {"shape", {1}},
                                        {"data", {" the cluster"}}}})}};
  std::size_t header_bytes = 0;
  const std::string body = encode_binary_outputs(answer, {true}, &header_bytes);
  const json header = json::parse(body.substr(0, header_bytes));
  const json& o = header["outputs"][0];
  EXPECT_FALSE(o.contains("data"));
  EXPECT_EQ(o["parameters"]["binary_data_size"], 4 + 12);
  EXPECT_EQ(body.substr(header_bytes), element(" the cluster"));
  // Not asked: the JSON answer as it was, nothing after it.
  const std::string plain = encode_binary_outputs(answer, {false}, &header_bytes);
  EXPECT_EQ(plain.size(), header_bytes);
  EXPECT_EQ(json::parse(plain), answer);
}

}  // namespace
}  // namespace prima::server
