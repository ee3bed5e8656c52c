// Recorder retention: with a limit the newest records and timeline rows stay, the dropped ones
// are counted, and the totals stay exact; without one (the default) everything is kept.
#include <gtest/gtest.h>

#include "engine/metrics/recorder.h"

namespace prima::metrics {
namespace {

void finish(Recorder* rec, RequestId id, double t, Outcome o, int tokens = 3) {
  Sequence s;
  s.req.id = id;
  s.req.arrival_s = t;
  s.req.prompt_tokens = 7;
  s.req.max_output_tokens = tokens;
  s.num_generated = tokens;
  s.first_token_s = t + 0.1;
  s.outcome = o;
  rec->on_arrival(t);
  for (int k = 0; k < tokens; ++k) rec->on_token(t + 0.1 * (k + 1));
  rec->on_end(s, t + 0.5);
}

TEST(RecorderRetention, DefaultKeepsEveryRecordAndRow) {
  Recorder rec;
  for (int i = 0; i < 1000; ++i) finish(&rec, i + 1, i * 0.01, Outcome::kCompleted);
  for (int t = 1; t <= 300; ++t) rec.sample(t, 0, 0, 1, 0);
  EXPECT_EQ(rec.records().size(), 1000u);
  EXPECT_EQ(rec.timeline().size(), 300u);
  EXPECT_EQ(rec.records_dropped(), 0);
  EXPECT_EQ(rec.timeline_rows_dropped(), 0);
  EXPECT_EQ(rec.records().front().id, 1u);
}

TEST(RecorderRetention, KeepsTheNewestRecordsAndCountsTheDropped) {
  Recorder rec;
  rec.set_retention(100, 0);
  std::int64_t completed = 0, failed = 0;
  for (int i = 0; i < 10007; ++i) {
    const Outcome o = i % 10 == 3 ? Outcome::kFailed : Outcome::kCompleted;
    (o == Outcome::kFailed ? failed : completed) += 1;
    finish(&rec, i + 1, i * 0.001, o);
    ASSERT_LE(rec.records().size(), 100u) << "after record " << i + 1;
  }
  const auto& r = rec.records();
  EXPECT_GE(r.size(), 75u);
  // Kept + dropped = all; the kept ones are the newest, in order.
  EXPECT_EQ(static_cast<std::int64_t>(r.size()) + rec.records_dropped(), 10007);
  EXPECT_EQ(r.back().id, 10007u);
  for (std::size_t i = 1; i < r.size(); ++i) EXPECT_EQ(r[i].id, r[i - 1].id + 1);
  // Totals are exact.
  EXPECT_EQ(rec.submitted(), 10007);
  EXPECT_EQ(rec.count(Outcome::kCompleted), completed);
  EXPECT_EQ(rec.count(Outcome::kFailed), failed);
  EXPECT_EQ(rec.count(Outcome::kPending), 0);
  EXPECT_EQ(rec.output_tokens(), 3 * 10007);
}

TEST(RecorderRetention, KeepsTheNewestTimelineRows) {
  Recorder rec;
  rec.set_retention(0, 40);
  for (int t = 1; t <= 1000; ++t) {
    finish(&rec, t, t - 0.9, Outcome::kCompleted);
    rec.sample(t, 0, 0, 1, 0);
    ASSERT_LE(rec.timeline().size(), 40u);
  }
  const auto& tl = rec.timeline();
  EXPECT_GE(tl.size(), 30u);
  EXPECT_EQ(static_cast<std::int64_t>(tl.size()) + rec.timeline_rows_dropped(), 1000);
  EXPECT_DOUBLE_EQ(tl.back().t_s, 1000);
  EXPECT_EQ(tl.back().completions, 1);
  // The records were not limited.
  EXPECT_EQ(rec.records().size(), 1000u);
  EXPECT_EQ(rec.records_dropped(), 0);
}

TEST(RecorderRetention, AnUnclosedWindowStaysBoundedAndItsPercentilesUseTheNewest) {
  // prima serve never samples: the window's completion latencies must not pile up either.
  Recorder rec;
  rec.set_retention(8, 4);
  for (int i = 0; i < 5000; ++i) {
    Sequence s;
    s.req.id = i + 1;
    s.req.arrival_s = 0;
    s.outcome = Outcome::kCompleted;
    rec.on_arrival(0);
    rec.on_end(s, i < 4990 ? 100.0 : 1.0);  // the last 10 take 1 s end to end
  }
  rec.sample(1, 0, 0, 1, 0);
  ASSERT_EQ(rec.timeline().size(), 1u);
  EXPECT_EQ(rec.timeline()[0].completions, 5000);      // exact count
  EXPECT_DOUBLE_EQ(rec.timeline()[0].e2e_p99_s, 1.0);  // from the newest (<= 8) only
  EXPECT_EQ(rec.records().back().id, 5000u);
}

}  // namespace
}  // namespace prima::metrics
