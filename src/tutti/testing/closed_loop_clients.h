// Closed-loop HTTP clients for tests: each posts one body to one path and,
// once answered, posts it again, until Stop(). What they got is counted:
// answers by status, the KServe model_name of each answer (which variant
// served a model-less request), and the failures' status and body.
#ifndef TUTTI_TESTING_CLOSED_LOOP_CLIENTS_H_
#define TUTTI_TESTING_CLOSED_LOOP_CLIENTS_H_

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tutti/testing/http_test_client.h"

namespace tutti::testing {

class ClosedLoopClients {
 public:
  ClosedLoopClients(int port, std::string path, std::string body, int clients) {
    for (int t = 0; t < clients; ++t) {
      threads_.emplace_back([this, port, path, body] {
        HttpTestClient c(port);
        while (!stop_) {
          const ClientResponse r = c.Request("POST", path, body);
          (r.status == 200 ? ok_ : failed_)++;
          const size_t at = r.body.find(R"("model_name":")");
          std::lock_guard<std::mutex> lock(mu_);
          if (r.status != 200) errors_.insert(absl::StrCat(r.status, " ", r.body));
          if (at != std::string::npos) served_by_.insert(r.body.substr(at + 14, r.body.find('"', at + 14) - at - 14));
        }
      });
    }
  }
  ~ClosedLoopClients() { Stop(); }

  // Ends the loops once each client's request in flight is answered.
  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int ok() const { return ok_; }
  int failed() const { return failed_; }
  bool ServedBy(const std::string& model) {
    std::lock_guard<std::mutex> lock(mu_);
    return served_by_.contains(model);
  }
  std::set<std::string> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0}, failed_{0};
  std::mutex mu_;
  std::set<std::string> served_by_, errors_;
  std::vector<std::thread> threads_;
};

}  // namespace tutti::testing

#endif  // TUTTI_TESTING_CLOSED_LOOP_CLIENTS_H_
