// The relay to another replica's leader (see replica_relay.h).
#include "backends/real/replica_relay.h"

#include <cstdio>
#include <deque>
#include <string>

namespace prima::real {
namespace {
constexpr int kTagOp = 201;
constexpr int kTagReply = 202;

StepInput op_of(StepKind kind) {
  StepInput s;
  s.kind = kind;
  return s;
}
}  // namespace

RelayRunner::RelayRunner(Communicator* relay, int replica, int first_rank, int ranks)
    : relay_(relay) {
  name_ = "replica " + std::to_string(replica) + " (job ranks " + std::to_string(first_rank) + "-" +
          std::to_string(first_rank + ranks - 1) + ", ranks 0-" + std::to_string(ranks - 1) +
          " within it)";
}

Status RelayRunner::send_op(const StepInput& op) {
  Status st = relay_->send_msg(1, kTagOp, encode_step(op));
  if (st.ok()) return st;
  return Status(st.code(), name_ + ", relay: " + st.message());
}

Result<SampledTokens> RelayRunner::reply(const char* what) {
  auto bytes = relay_->recv_msg(1, kTagReply);
  if (!bytes.ok())
    return Status(bytes.status().code(),
                  name_ + ", relay (" + what + "): " + bytes.status().message());
  auto t = decode_reply(*bytes);
  if (!t.ok()) return Status(t.status().code(), name_ + ": " + t.status().message());
  return t;
}

Status RelayRunner::begin_step(const StepInput& s) {
  return send_op(s);
}

Result<SampledTokens> RelayRunner::finish_step(const StepInput& s) {
  StepInput op = op_of(StepKind::kFinish);
  op.step_id = s.step_id;
  PRIMA_RETURN_IF_ERROR(send_op(op));
  return reply("step");
}

Status RelayRunner::ping() {
  PRIMA_RETURN_IF_ERROR(send_op(op_of(StepKind::kPing)));
  return reply("ping").status();
}

void RelayRunner::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  (void)send_op(op_of(StepKind::kShutdown));
}

Status serve_relay(StepRunner* runner, Communicator* relay) {
  struct Begun {
    StepInput input;
    Status status;  // begin_step's
  };
  std::deque<Begun> begun;
  Status broken;  // the replica's ranks are out of step: every later operation fails with it
  auto answer = [&](const Status& st, const SampledTokens& t) {
    return relay->send_msg(0, kTagReply, encode_reply(st, t));
  };
  auto note = [&](const Status& st) {
    if (!broken.ok() || st.ok() || st.code() == StatusCode::kInvalidArgument) return;
    broken = st;
    std::fprintf(stderr, "prima (replica leader): the replica cannot serve again: %s\n",
                 st.message().c_str());
  };
  for (;;) {
    auto msg = relay->recv_msg(0, kTagOp);
    if (!msg.ok()) {
      if (msg.status().code() == StatusCode::kDeadlineExceeded) continue;  // idle engine
      return msg.status();
    }
    PRIMA_ASSIGN_OR_RETURN(StepInput op, decode_step(*msg));
    switch (op.kind) {
      case StepKind::kShutdown:
        if (broken.ok()) runner->shutdown();
        return ok_status();
      case StepKind::kPing: {
        Status st = broken.ok() ? runner->ping() : broken;
        note(st);
        PRIMA_RETURN_IF_ERROR(answer(st, {}));
        break;
      }
      case StepKind::kForward: {
        Status st = broken.ok() ? runner->begin_step(op) : broken;
        note(st);
        begun.push_back({std::move(op), st});
        break;
      }
      case StepKind::kFinish: {
        if (begun.empty()) {
          PRIMA_RETURN_IF_ERROR(answer(internal_error("relay: finish without a begun step"), {}));
          break;
        }
        Begun b = std::move(begun.front());
        begun.pop_front();
        if (!b.status.ok() || !broken.ok()) {
          PRIMA_RETURN_IF_ERROR(answer(b.status.ok() ? broken : b.status, {}));
          break;
        }
        auto t = runner->finish_step(b.input);
        note(t.status());
        PRIMA_RETURN_IF_ERROR(answer(t.status(), t.ok() ? *t : SampledTokens{}));
        break;
      }
    }
  }
}

}  // namespace prima::real
