// Chat templates without a Jinja interpreter: the template text is recognised by family from
// its markers (ChatML "<|im_start|>", Llama 3 "<|start_header_id|>", Llama 2 "[INST]" with
// "<<SYS>>", Mistral "[INST]" without it, Phi-3 "<|user|>" with "<|end|>", Zephyr "<|user|>",
// Gemma "<start_of_turn>") and rendered in code the way each family's reference template
// renders. A ChatML template that inserts a default system message when the first message is
// not a system one ("<|im_start|>system\n...<|im_end|>" as a literal, guarded by
// "!= 'system'") has that literal extracted and used.
// Pure functions; thread-safe.
#include "backends/real/tokenizer_internal.h"

namespace prima::real::tok {

namespace {

bool has(const std::string& s, std::string_view x) {
  return s.find(x) != std::string::npos;
}

// Jinja string-literal escapes that templates use: \n, \t, \', \", \\.
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Python's str.strip() for the whitespace templates meet.
std::string trim(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  const std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return "";
  const std::size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

void chatml_default_system(const std::string& tmpl, ChatTemplate* t) {
  if (!has(tmpl, "!= 'system'") && !has(tmpl, "!= \"system\"")) return;
  for (std::string_view head : {"<|im_start|>system\n", "<|im_start|>system\\n"}) {
    const std::size_t p = tmpl.find(head);
    if (p == std::string::npos) continue;
    const std::size_t b = p + head.size();
    const std::size_t e = tmpl.find("<|im_end|>", b);
    if (e == std::string::npos) continue;
    const std::string_view body = std::string_view(tmpl).substr(b, e - b);
    // A literal only: an expression (quotes, "+", "{{") would need an interpreter.
    if (body.find_first_of("'\"{}") != std::string_view::npos) continue;
    t->default_system = unescape(body);
    t->has_default_system = true;
    return;
  }
}

Status alternation_error(std::size_t i) {
  return invalid_argument("chat template: conversation roles must alternate user/assistant" +
                          std::string("/user/... (message ") + std::to_string(i) + ")");
}

}  // namespace

ChatTemplate recognise_chat_template(const std::string& tmpl, const std::string& bos_text,
                                     const std::string& eos_text) {
  ChatTemplate t;
  t.bos_text = bos_text;
  t.eos_text = eos_text;
  t.uses_bos = has(tmpl, "bos_token");
  if (tmpl.empty()) return t;
  if (has(tmpl, "<|im_start|>")) {
    t.family = "chatml";
    chatml_default_system(tmpl, &t);
  } else if (has(tmpl, "<|start_header_id|>")) {
    t.family = "llama3";
  } else if (has(tmpl, "[INST]")) {
    t.family = has(tmpl, "<<SYS>>") ? "llama2" : "mistral";
  } else if (has(tmpl, "<|user|>")) {
    t.family = has(tmpl, "<|end|>") ? "phi3" : "zephyr";
  } else if (has(tmpl, "<start_of_turn>")) {
    t.family = "gemma";
  }
  return t;
}

Result<std::string> render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& msgs,
                                bool add_generation_prompt) {
  std::string out;
  const std::string bos = t.uses_bos ? t.bos_text : "";
  if (t.family == "chatml") {
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      if (i == 0 && t.has_default_system && msgs[0].role != "system") {
        out += "<|im_start|>system\n" + t.default_system + "<|im_end|>\n";
      }
      out += "<|im_start|>" + msgs[i].role + "\n" + msgs[i].content + "<|im_end|>\n";
    }
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
  } else if (t.family == "llama3") {
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      if (i == 0) out += bos;
      out += "<|start_header_id|>" + msgs[i].role + "<|end_header_id|>\n\n" +
             trim(msgs[i].content) + "<|eot_id|>";
    }
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  } else if (t.family == "llama2") {
    std::size_t first = 0;
    std::string system;
    if (!msgs.empty() && msgs[0].role == "system") {
      system = msgs[0].content;
      first = 1;
    }
    for (std::size_t i = first; i < msgs.size(); ++i) {
      const std::size_t k = i - first;
      if ((msgs[i].role == "user") != (k % 2 == 0)) return alternation_error(i);
      std::string content = msgs[i].content;
      if (k == 0 && first == 1) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
      if (msgs[i].role == "user") {
        out += t.bos_text + "[INST] " + trim(content) + " [/INST]";
      } else if (msgs[i].role == "assistant") {
        out += " " + trim(content) + " " + t.eos_text;
      }
    }
  } else if (t.family == "mistral") {
    out += bos;
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      if ((msgs[i].role == "user") != (i % 2 == 0)) return alternation_error(i);
      if (msgs[i].role == "user") {
        out += "[INST] " + msgs[i].content + " [/INST]";
      } else if (msgs[i].role == "assistant") {
        out += msgs[i].content + t.eos_text;
      } else {
        return invalid_argument("chat template (mistral): only user and assistant roles, got \"" +
                                msgs[i].role + "\"");
      }
    }
  } else if (t.family == "zephyr" || t.family == "phi3") {
    const std::string end = t.family == "zephyr" ? t.eos_text : std::string("<|end|>");
    for (const ChatMessage& m : msgs) {
      out += "<|" + m.role + "|>\n" + m.content + end + "\n";
    }
    if (add_generation_prompt) {
      out += "<|assistant|>\n";
    } else if (t.family == "phi3") {
      out += t.eos_text;
    }
  } else if (t.family == "gemma") {
    out += bos;
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      if (msgs[i].role == "system") {
        return invalid_argument("chat template (gemma): the system role is not supported");
      }
      if ((msgs[i].role == "user") != (i % 2 == 0)) return alternation_error(i);
      const std::string role = msgs[i].role == "assistant" ? "model" : msgs[i].role;
      out += "<start_of_turn>" + role + "\n" + trim(msgs[i].content) + "<end_of_turn>\n";
    }
    if (add_generation_prompt) out += "<start_of_turn>model\n";
  } else {
    return invalid_argument(
        "chat template: unknown template family (no ChatML, Llama 2/3, "
        "Mistral, Zephyr, Phi-3 or Gemma markers)");
  }
  return out;
}

}  // namespace prima::real::tok
