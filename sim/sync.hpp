// Small synchronization helpers over SimGrid's simulated primitives.
//
// Actors are cooperative: plain C++ state shared between them changes only between
// simcalls, so the containers below need no locking of their own; SimGrid semaphores and
// condition variables provide the blocking. Fast paths skip simcalls when nobody waits,
// which keeps the simulation cheap (see the benchmark).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mutex.hpp>
#include <simgrid/s4u/Semaphore.hpp>

namespace pipeplan::sim {

// A monotonic counter others can wait on ("stream has completed n ops").
class Counter {
 public:
  Counter() : mutex_(simgrid::s4u::Mutex::create()), cv_(simgrid::s4u::ConditionVariable::create()) {}
  std::int64_t value() const { return value_; }
  void add(std::int64_t n = 1) {
    value_ += n;
    if (waiters_ > 0) {
      std::unique_lock lock(*mutex_);
      cv_->notify_all();
    }
  }
  // Blocks until value() >= target.
  void wait_at_least(std::int64_t target) {
    if (value_ >= target) return;
    ++waiters_;
    {
      std::unique_lock lock(*mutex_);
      while (value_ < target) cv_->wait(lock);
    }
    --waiters_;
  }
  // Blocks until value() >= target or timeout_s of simulated time has passed, whichever comes first.
  void wait_at_least_for(std::int64_t target, double timeout_s) {
    if (value_ >= target || timeout_s <= 0.0) return;
    ++waiters_;
    {
      std::unique_lock lock(*mutex_);
      const double deadline_s = simgrid::s4u::Engine::get_clock() + timeout_s;
      cv_->wait_until(lock, deadline_s, [&] { return value_ >= target; });
    }
    --waiters_;
  }

 private:
  std::int64_t value_ = 0;
  int waiters_ = 0;
  simgrid::s4u::MutexPtr mutex_;
  simgrid::s4u::ConditionVariablePtr cv_;
};

// An unbounded FIFO whose pop() blocks while it is empty.
template <typename T>
class Fifo {
 public:
  Fifo() : items_available_(simgrid::s4u::Semaphore::create(0)) {}
  void push(T item) {
    items_.push_back(std::move(item));
    items_available_->release();
  }
  T pop() {
    items_available_->acquire();
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }
  std::size_t size() const { return items_.size(); }

 private:
  std::deque<T> items_;
  simgrid::s4u::SemaphorePtr items_available_;
};

}  // namespace pipeplan::sim
