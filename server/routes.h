// The API route sets, one file each: OpenAI (openai_api.cpp, which adds vLLM's /tokenize and
// /detokenize from tokenize_api.cpp; the Responses API: responses_api.cpp), TGI (tgi_api.cpp),
// KServe v2 (kserve_api.cpp). Each registers its routes on the server; handlers run on httplib's
// worker threads and share the (thread-safe) context, which must outlive the server.
#pragma once

#include <httplib.h>

#include "server/server_context.h"

namespace prima::server {

void add_openai_routes(httplib::Server& svr, ServerContext* ctx);
void add_tokenize_routes(httplib::Server& svr, ServerContext* ctx);
void add_responses_routes(httplib::Server& svr, ServerContext* ctx);
void add_tgi_routes(httplib::Server& svr, ServerContext* ctx);
void add_kserve_routes(httplib::Server& svr, ServerContext* ctx);

}  // namespace prima::server
