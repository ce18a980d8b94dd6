// One blocking call's answer, handed from the client's I/O thread to the thread that called.
// Internal to the client library.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "fencekeeper/client.h"

namespace fencekeeper {

class CallAnswer {
 public:
  // Records the answer and wakes the caller. Only the first call counts: an answer may be given
  // from inside the reply's handler, before Cap'n Proto sends its Finish, and again after it.
  void set(Status status);
  // Waits for the answer. With spinFirst the caller first polls it for a short while (one thread
  // of the process at a time): an answer that comes within microseconds then costs no futex
  // wake-up, and no scheduler latency of a sleeping thread.
  Status wait(bool spinFirst);

 private:
  std::atomic<bool> ready_{false};  // polled while spinning
  std::mutex mutex_;
  std::condition_variable answered_;
  bool set_ = false;
  Status status_;
};

// The I/O thread's hold on a CallAnswer, like a std::promise: dropped without an answer (the
// loop ended with the call in flight, or before it ran), it answers `orElse`.
class CallAnswerSetter {
 public:
  CallAnswerSetter(std::shared_ptr<CallAnswer> answer, Status orElse)
      : answer_(std::move(answer)), orElse_(std::move(orElse)) {}
  ~CallAnswerSetter() { answer_->set(std::move(orElse_)); }
  CallAnswerSetter(const CallAnswerSetter&) = delete;
  CallAnswerSetter& operator=(const CallAnswerSetter&) = delete;

  void set(Status status) { answer_->set(std::move(status)); }

 private:
  std::shared_ptr<CallAnswer> answer_;
  Status orElse_;
};

}  // namespace fencekeeper
