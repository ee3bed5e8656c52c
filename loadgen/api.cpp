// Request bodies and response reading for the OpenAI and TGI endpoints (see api.h).
#include "loadgen/api.h"

#include <nlohmann/json.hpp>

#include "engine/config/json_parse.h"

namespace prima::loadgen {
namespace {

using nlohmann::json;

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.size() > 300) s = s.substr(0, 300) + "...";
  return s;
}

// The error message of an OpenAI ({"error": {"message"}}) or TGI ({"error": "..."}) body.
std::string error_of(const json& j) {
  auto it = j.find("error");
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return one_line(it->get<std::string>());
  if (it->is_object()) {
    auto m = it->find("message");
    if (m != it->end() && m->is_string()) return one_line(m->get<std::string>());
  }
  return one_line(it->dump());
}

void read_timings(const json& p, ServerTimings* t) {
  if (!p.is_object()) return;
  auto get = [&](const char* k, bool* has, double* v) {
    auto it = p.find(k);
    if (it != p.end() && it->is_number()) {
      *has = true;
      *v = it->get<double>();
    }
  };
  get("ttft_s", &t->has_ttft, &t->ttft_s);
  get("e2e_s", &t->has_e2e, &t->e2e_s);
  get("queue_s", &t->has_queue, &t->queue_s);
}

int int_or(const json& j, const char* k, int def) {
  auto it = j.find(k);
  return it != j.end() && it->is_number_integer() ? it->get<int>() : def;
}

const char* priority_text(Priority p) {
  return p == Priority::kHigh ? "high" : p == Priority::kLow ? "low" : "normal";
}

}  // namespace

bool parse_endpoint(std::string_view s, Endpoint* out) {
  if (s == "completions" || s == "completion" || s == "openai")
    *out = Endpoint::kCompletions;
  else if (s == "chat" || s == "chat-completions" || s == "openai-chat")
    *out = Endpoint::kChat;
  else if (s == "tgi" || s == "generate")
    *out = Endpoint::kTgi;
  else
    return false;
  return true;
}

const char* endpoint_name(Endpoint e) {
  switch (e) {
    case Endpoint::kCompletions:
      return "completions";
    case Endpoint::kChat:
      return "chat";
    case Endpoint::kTgi:
      return "tgi";
  }
  return "?";
}

std::string endpoint_path(Endpoint e, bool stream) {
  switch (e) {
    case Endpoint::kCompletions:
      return "/v1/completions";
    case Endpoint::kChat:
      return "/v1/chat/completions";
    case Endpoint::kTgi:
      return stream ? "/generate_stream" : "/generate";
  }
  return "/";
}

std::string request_body(Endpoint e, const BodyOptions& o, const std::string& prompt,
                         const PlannedRequest& p) {
  json j;
  if (e == Endpoint::kTgi) {
    json params{{"max_new_tokens", p.output_tokens}, {"details", true}};
    if (p.send_qos) {
      params["priority"] = priority_text(p.priority);
      if (p.sla_s > 0) params["sla"] = p.sla_s;
    }
    if (o.extra.is_object())
      for (auto it = o.extra.begin(); it != o.extra.end(); ++it) params[it.key()] = it.value();
    j = json{{"inputs", prompt}, {"parameters", params}};
    return j.dump();
  }
  j["model"] = o.model;
  if (e == Endpoint::kChat)
    j["messages"] = json::array({json{{"role", "user"}, {"content", prompt}}});
  else
    j["prompt"] = prompt;
  j["max_tokens"] = p.output_tokens;
  j["stream"] = o.stream;
  if (o.stream) j["stream_options"] = json{{"include_usage", true}};
  if (o.ignore_eos) j["ignore_eos"] = true;
  if (p.send_qos) {
    j["priority"] = priority_text(p.priority);
    if (p.sla_s > 0) j["sla"] = p.sla_s;
  }
  if (o.extra.is_object())
    for (auto it = o.extra.begin(); it != o.extra.end(); ++it) j[it.key()] = it.value();
  return j.dump();
}

void read_prima_timings(const std::string& text, ServerTimings* t) {
  json j = config::parse_json(text, nullptr).value_or(json(json::value_t::discarded));
  if (!j.is_discarded()) read_timings(j, t);
}

void ResponseReader::token_at(double t_s) {
  if (token_events_ == 0)
    first_token_s_ = t_s;
  else
    itl_s_.push_back(t_s - last_token_s_);
  last_token_s_ = t_s;
  ++token_events_;
}

void ResponseReader::on_event(const std::string& data, double t_s) {
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  json j = config::parse_json(data, nullptr).value_or(json(json::value_t::discarded));
  if (j.is_discarded() || !j.is_object()) {
    if (error_.empty()) error_ = "unparsable stream event: " + one_line(data);
    return;
  }
  if (std::string e = error_of(j); !e.empty()) {
    if (error_.empty()) error_ = e;
    return;
  }
  if (endpoint_ == Endpoint::kTgi) {
    auto tok = j.find("token");
    if (tok != j.end() && tok->is_object()) token_at(t_s);
    auto d = j.find("details");
    if (d != j.end() && d->is_object()) {
      usage_out_ = int_or(*d, "generated_tokens", usage_out_);
      if (auto p = d->find("prima"); p != d->end()) read_timings(*p, &server_);
    }
    auto g = j.find("generated_text");
    if (g != j.end() && g->is_string()) finished_ = true;
    return;
  }
  // OpenAI chunk: a token when the choice carries text (completions) or delta.content (chat).
  auto ch = j.find("choices");
  if (ch != j.end() && ch->is_array() && !ch->empty()) {
    const json& c = (*ch)[0];
    const json* text = nullptr;
    if (auto t = c.find("text"); t != c.end()) text = &*t;
    if (auto d = c.find("delta"); d != c.end() && d->is_object())
      if (auto t = d->find("content"); t != d->end()) text = &*t;
    if (text && text->is_string() && !text->get_ref<const std::string&>().empty()) token_at(t_s);
    if (auto f = c.find("finish_reason"); f != c.end() && !f->is_null()) finished_ = true;
  }
  if (auto p = j.find("prima"); p != j.end()) read_timings(*p, &server_);
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    usage_out_ = int_or(*u, "completion_tokens", usage_out_);
    usage_in_ = int_or(*u, "prompt_tokens", usage_in_);
  }
}

void ResponseReader::on_body(const std::string& body) {
  json j = config::parse_json(body, nullptr).value_or(json(json::value_t::discarded));
  if (j.is_discarded() || !j.is_object()) {
    error_ = "unparsable response body: " + one_line(body);
    return;
  }
  if (std::string e = error_of(j); !e.empty()) {
    error_ = e;
    return;
  }
  finished_ = true;
  if (endpoint_ == Endpoint::kTgi) {
    if (!j.contains("generated_text")) error_ = "response has no generated_text";
    if (auto d = j.find("details"); d != j.end() && d->is_object()) {
      usage_out_ = int_or(*d, "generated_tokens", usage_out_);
      if (auto p = d->find("prima"); p != d->end()) read_timings(*p, &server_);
    }
    return;
  }
  if (!j.contains("choices")) error_ = "response has no choices";
  if (auto p = j.find("prima"); p != j.end()) read_timings(*p, &server_);
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    usage_out_ = int_or(*u, "completion_tokens", usage_out_);
    usage_in_ = int_or(*u, "prompt_tokens", usage_in_);
  }
}

}  // namespace prima::loadgen
