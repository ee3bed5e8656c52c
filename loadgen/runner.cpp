// The benchmark loop: arrivals on the wall clock, a worker pool of HTTP clients (see runner.h).
#include "loadgen/runner.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "backends/wall/wall_runtime.h"

namespace prima::loadgen {
namespace {

struct Job {
  PlannedRequest plan;
  workload::RequestSpec spec;
};

// Jobs waiting for a worker, the workers, and the finished results. Guarded by mu.
class Pool {
 public:
  Pool(const RunOptions& o, WallRuntime* rt, workload::WorkloadDriver* driver,
       std::size_t* outstanding, std::vector<RequestResult>* results)
      : o_(o), rt_(rt), driver_(driver), outstanding_(outstanding), results_(results) {}
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void push(Job j) {
    std::lock_guard<std::mutex> l(mu_);
    jobs_.push_back(std::move(j));
    // Idle workers that have not woken yet are already promised to earlier jobs.
    if (jobs_.size() > static_cast<std::size_t>(idle_) &&
        static_cast<int>(threads_.size()) < o_.max_workers)
      threads_.emplace_back([this] { work(); });
    cv_.notify_one();
  }
  std::size_t in_flight() const { return in_flight_.load(); }

 private:
  void work() {
    RequestClient client(o_.client);
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (stop_) return;
      Job j = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      ++in_flight_;
      RequestResult r = client.send(j.plan, prompt_for(j.plan));
      --in_flight_;
      rt_->post([this, j = std::move(j), r = std::move(r)]() mutable {
        (*results_)[j.plan.index] = std::move(r);
        --*outstanding_;
        driver_->on_finished(j.spec, rt_->now());
      });
      l.lock();
    }
  }

  std::string prompt_for(const PlannedRequest& p) const {
    if (p.dataset_row >= 0) return (*o_.dataset)[static_cast<std::size_t>(p.dataset_row)].prompt;
    return synthetic_prompt(p.prompt_tokens, o_.client.endpoint, o_.seed, p.index);
  }

  const RunOptions& o_;
  WallRuntime* rt_;
  workload::WorkloadDriver* driver_;
  std::size_t* outstanding_;             // loop thread only
  std::vector<RequestResult>* results_;  // loop thread only
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<std::thread> threads_;
  int idle_ = 0;
  bool stop_ = false;
  std::atomic<std::size_t> in_flight_{0};
};

}  // namespace

Result<RunResult> run_bench(const workload::WorkloadSpec& spec, std::uint64_t seed,
                            double duration_s, const RunOptions& o) {
  if (o.max_workers < 1) return invalid_argument("run_bench: max_workers must be >= 1");
  PRIMA_ASSIGN_OR_RETURN(auto driver, workload::make_workload(spec, seed, duration_s));
  WallRuntime rt;
  RunOptions opts = o;
  opts.client.t0 = rt.epoch();  // the clients' clock is the runtime's clock
  const double t_start = rt.now();
  RunResult out;
  std::size_t outstanding = 0, failed_so_far = 0;
  std::uint64_t next_index = 0;
  {
    Pool pool(opts, &rt, driver.get(), &outstanding, &out.requests);
    auto submit = [&](const workload::RequestSpec& s) {
      PlannedRequest p;
      p.index = next_index++;
      p.due_s = s.arrival_s;
      p.prompt_tokens = s.prompt_tokens;
      p.output_tokens = s.output_tokens;
      p.priority = s.priority;
      p.sla_s = s.sla_s;
      p.send_qos = o.send_qos;
      p.user = s.user;
      if (o.dataset && !o.dataset->empty()) {
        p.dataset_row = static_cast<int>(p.index % o.dataset->size());
        const DatasetRow& row = (*o.dataset)[static_cast<std::size_t>(p.dataset_row)];
        if (row.output_tokens > 0) p.output_tokens = row.output_tokens;
      }
      out.requests.emplace_back();
      out.requests.back().plan = p;
      ++outstanding;
      pool.push(Job{p, s});
    };
    PRIMA_RETURN_IF_ERROR(driver->start(&rt, submit));
    std::function<void()> tick;
    if (o.progress) {
      tick = [&] {
        std::size_t done = 0;
        failed_so_far = 0;
        for (const auto& r : out.requests)
          if (r.end_s > 0) {
            ++done;
            if (!r.ok) ++failed_so_far;
          }
        std::fprintf(
            stderr, "prima bench: %6.1f s  sent %zu  done %zu  failed %zu  in flight %zu\n",
            rt.now() - t_start, out.requests.size(), done, failed_so_far, pool.in_flight());
        rt.at(rt.now() + 1.0, tick);
      };
      rt.at(t_start + 1.0, tick);
    }
    rt.run_until([&] { return driver->done() && outstanding == 0; });
    out.wall_s = rt.now() - t_start;
  }  // joins the workers
  return out;
}

}  // namespace prima::loadgen
