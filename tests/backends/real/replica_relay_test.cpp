// The relay between job rank 0 and another replica's leader (backends/real/replica_relay.h),
// in one process: an in-memory pair of communicators, serve_relay on a thread over a scripted
// StepRunner. The multi-process path (UCX, three hosts, a cut link) is multihost_test.py's.
#include "backends/real/replica_relay.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace prima::real {
namespace {

// Messages between rank 0 and rank 1, by (destination, tag); recv waits up to timeout_s.
struct Wire {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::pair<int, int>, std::deque<std::vector<std::uint8_t>>> queues;
  bool cut = false;  // messages are lost (a link down)
};

class MemComm final : public Communicator {
 public:
  MemComm(Wire* w, int rank, double timeout_s) : w_(w), rank_(rank), timeout_s_(timeout_s) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  Status send(int, int, const void*, std::size_t) override { return unimplemented(); }
  Status recv(int, int, void*, std::size_t) override { return unimplemented(); }
  Status send_msg(int peer, int tag, const std::vector<std::uint8_t>& bytes) override {
    std::lock_guard<std::mutex> l(w_->mu);
    if (!w_->cut) w_->queues[{peer, tag}].push_back(bytes);
    w_->cv.notify_all();
    return ok_status();
  }
  Result<std::vector<std::uint8_t>> recv_msg(int peer, int tag) override {
    std::unique_lock<std::mutex> l(w_->mu);
    auto& q = w_->queues[{rank_, tag}];
    if (!w_->cv.wait_for(l, std::chrono::duration<double>(timeout_s_), [&] { return !q.empty(); }))
      return Status(StatusCode::kDeadlineExceeded,
                    "recv from rank " + std::to_string(peer) + " timed out");
    auto m = std::move(q.front());
    q.pop_front();
    return m;
  }
  Status allreduce_sum(float*, std::size_t) override { return unimplemented(); }
  Status broadcast(void*, std::size_t, int) override { return unimplemented(); }
  Status barrier() override { return unimplemented(); }
  std::vector<std::uint64_t> bytes_sent() const override { return {}; }
  std::vector<std::uint64_t> bytes_received() const override { return {}; }
  Result<std::unique_ptr<Communicator>> group(const std::vector<int>&) override {
    return unimplemented();
  }

 private:
  static Status unimplemented() { return internal_error("not used by the relay"); }
  Wire* w_;
  int rank_;
  double timeout_s_;
};

// The replica's ranks, scripted: each begun step samples its step id (as every row's token);
// a step id in fail_begin / fail_finish fails there with the status given.
struct ScriptedRunner final : StepRunner {
  std::mutex mu;
  std::vector<std::string> calls;
  std::map<std::uint64_t, Status> fail_begin, fail_finish;
  bool shut = false;

  void log(std::string c) {
    std::lock_guard<std::mutex> l(mu);
    calls.push_back(std::move(c));
  }
  Status begin_step(const StepInput& s) override {
    log("begin " + std::to_string(s.step_id));
    auto it = fail_begin.find(s.step_id);
    return it == fail_begin.end() ? ok_status() : it->second;
  }
  Result<SampledTokens> finish_step(const StepInput& s) override {
    log("finish " + std::to_string(s.step_id));
    if (auto it = fail_finish.find(s.step_id); it != fail_finish.end()) return it->second;
    SampledTokens t;
    t.ids.assign(s.seqs.size(), static_cast<int>(s.step_id));
    if (s.wants_logprobs()) t.logprobs.assign(s.seqs.size(), TokenLogprobs{-0.5f, {{3, -0.5f}}});
    return t;
  }
  Status ping() override {
    log("ping");
    return ok_status();
  }
  void shutdown() override {
    log("shutdown");
    shut = true;
  }
};

StepInput step(std::uint64_t id, int seqs = 2, bool logprobs = false) {
  StepInput s;
  s.step_id = id;
  for (int i = 0; i < seqs; ++i) {
    SeqInput q;
    q.request = id * 10 + i;
    q.tokens = {1, 2};
    q.blocks = {0};
    q.samples = true;
    q.sampling.logprobs = logprobs ? 1 : -1;
    s.seqs.push_back(q);
  }
  return s;
}

struct Relay : ::testing::Test {
  Wire wire;
  MemComm engine_side{&wire, 0, 2.0}, leader_side{&wire, 1, 0.05};
  ScriptedRunner replica;
  RelayRunner runner{&engine_side, 1, 2, 2};
  Status served;
  std::thread leader;

  void start() {
    leader = std::thread([this] { served = serve_relay(&replica, &leader_side); });
  }
  void TearDown() override {
    if (!leader.joinable()) return;
    runner.shutdown();
    leader.join();
  }
};

TEST_F(Relay, PipelinedStepsRunInTheEnginesOrderAndReturnWhatTheReplicaSampled) {
  start();
  const StepInput a = step(1), b = step(2, 3, /*logprobs=*/true);
  ASSERT_TRUE(runner.begin_step(a).ok());
  ASSERT_TRUE(runner.begin_step(b).ok());  // two in flight (PP 2)
  auto ta = runner.finish_step(a);
  ASSERT_TRUE(ta.ok()) << ta.status().message();
  EXPECT_EQ(ta->ids, (std::vector<int>{1, 1}));
  EXPECT_TRUE(ta->logprobs.empty());
  auto tb = runner.finish_step(b);
  ASSERT_TRUE(tb.ok()) << tb.status().message();
  EXPECT_EQ(tb->ids, (std::vector<int>{2, 2, 2}));
  ASSERT_EQ(tb->logprobs.size(), 3u);
  EXPECT_FLOAT_EQ(tb->logprobs[0].logprob, -0.5f);
  EXPECT_EQ(tb->logprobs[0].top, (std::vector<std::pair<int, float>>{{3, -0.5f}}));
  EXPECT_TRUE(runner.ping().ok());
  runner.shutdown();
  leader.join();
  EXPECT_TRUE(served.ok()) << served.message();
  EXPECT_TRUE(replica.shut);
  EXPECT_EQ(replica.calls, (std::vector<std::string>{"begin 1", "begin 2", "finish 1", "finish 2",
                                                     "ping", "shutdown"}));
}

TEST_F(Relay, ABadStepFailsAloneButALostRankBreaksTheReplicaForGood) {
  replica.fail_begin[1] = invalid_argument("block 99 out of range");
  replica.fail_finish[3] =
      Status(StatusCode::kDeadlineExceeded,
             "recv from rank 1 timed out after 3 s (peer rank 1 not responding)");
  start();
  // A step the replica rejects: its error at finish, with its code; the replica serves on.
  ASSERT_TRUE(runner.begin_step(step(1)).ok());
  auto bad = runner.finish_step(step(1));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("block 99"), std::string::npos);
  ASSERT_TRUE(runner.begin_step(step(2)).ok());
  EXPECT_TRUE(runner.finish_step(step(2)).ok());
  // A rank of the replica stops answering: the cause comes back, naming the replica's ranks.
  ASSERT_TRUE(runner.begin_step(step(3)).ok());
  auto lost = runner.finish_step(step(3));
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(lost.status().message(),
            "replica 1 (job ranks 2-3, ranks 0-1 within it): recv from rank 1 timed out after 3 s "
            "(peer rank 1 not responding)");
  // Every later step and probe fails with it, without touching the replica's ranks.
  ASSERT_TRUE(runner.begin_step(step(4)).ok());
  auto later = runner.finish_step(step(4));
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.status().message().find("peer rank 1 not responding"), std::string::npos);
  Status probe = runner.ping();
  EXPECT_EQ(probe.code(), StatusCode::kDeadlineExceeded);
  runner.shutdown();
  leader.join();
  EXPECT_TRUE(served.ok());
  EXPECT_FALSE(replica.shut);  // its ranks are out of step: the job's end releases them
  EXPECT_EQ(replica.calls,
            (std::vector<std::string>{"begin 1", "begin 2", "finish 2", "begin 3", "finish 3"}));
}

TEST_F(Relay, ALeaderThatStopsAnsweringTimesOutOnTheRelay) {
  start();
  {
    std::lock_guard<std::mutex> l(wire.mu);
    wire.cut = true;
  }
  ASSERT_TRUE(runner.begin_step(step(1)).ok());  // lost on the way
  auto r = runner.finish_step(step(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r.status().message().rfind("replica 1 (job ranks 2-3, ranks 0-1 within it), relay "
                                       "(step): ",
                                       0),
            0u)
      << r.status().message();
  {
    std::lock_guard<std::mutex> l(wire.mu);
    wire.cut = false;
  }
}

TEST(StepReply, RoundTripsTheStatusAndTheTokensAndNamesTheByteOfABadOne) {
  SampledTokens t;
  t.ids = {4, -1, 7};
  t.logprobs = {TokenLogprobs{-1.25f, {{4, -1.25f}, {9, -2.0f}}}, {}, TokenLogprobs{-0.1f, {}}};
  auto ok = decode_reply(encode_reply(ok_status(), t));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->ids, t.ids);
  ASSERT_EQ(ok->logprobs.size(), 3u);
  EXPECT_EQ(ok->logprobs[0].top, t.logprobs[0].top);
  EXPECT_FLOAT_EQ(ok->logprobs[2].logprob, -0.1f);
  EXPECT_TRUE(ok->prompt_logprobs.empty());
  // Scored prompt tokens, per sequence.
  SampledTokens scored = t;
  scored.prompt_logprobs = {
      {TokenLogprobs{-3.5f, {{1, -0.5f}}}, TokenLogprobs{-0.75f, {}}}, {}, {}};
  auto back = decode_reply(encode_reply(ok_status(), scored));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->prompt_logprobs.size(), 3u);
  ASSERT_EQ(back->prompt_logprobs[0].size(), 2u);
  EXPECT_FLOAT_EQ(back->prompt_logprobs[0][0].logprob, -3.5f);
  EXPECT_EQ(back->prompt_logprobs[0][0].top, scored.prompt_logprobs[0][0].top);
  EXPECT_FLOAT_EQ(back->prompt_logprobs[0][1].logprob, -0.75f);

  auto err = decode_reply(encode_reply(unavailable("rank 3 is gone"), {}));
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(err.status().message(), "rank 3 is gone");

  auto bytes = encode_reply(ok_status(), t);
  bytes.resize(bytes.size() - 2);
  auto cut = decode_reply(bytes);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cut.status().message().find("truncated at byte"), std::string::npos);

  bytes = encode_reply(ok_status(), t);
  bytes[4] = 200;  // status code
  auto code = decode_reply(bytes);
  ASSERT_FALSE(code.ok());
  EXPECT_NE(code.status().message().find("unknown status code 200 at byte 4"), std::string::npos);
  EXPECT_FALSE(decode_reply(encode_step(StepInput{})).ok());  // a step, not a reply
}

}  // namespace
}  // namespace prima::real
