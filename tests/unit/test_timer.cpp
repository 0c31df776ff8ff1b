// core/timer.hpp against std::this_thread::sleep_for (an independent lower bound): elapsed
// times never run backwards, cover the sleeps, and lap/restart start a new interval.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tessel/core/timer.hpp"

using tessel::ScopedSeconds;
using tessel::Stopwatch;

TEST(Stopwatch, CoversSleepsAndNeverRunsBackwards) {
  Stopwatch w;
  double last = 0;
  for (int i = 0; i < 100; ++i) {
    const double s = w.seconds();
    EXPECT_GE(s, last);
    last = s;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(w.seconds(), 0.020);
  EXPECT_GE(w.microseconds(), 20000.0);
  const double lap = w.lap();
  EXPECT_GE(lap, 0.020);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(w.seconds(), 0.005);
  EXPECT_GE(w.seconds() + lap, 0.025);
  w.restart();
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  EXPECT_GE(w.seconds(), 0.003);
}

TEST(ScopedSeconds, AccumulatesItsLifetimes) {
  double total = 1.0;
  for (int i = 0; i < 2; ++i) {
    ScopedSeconds timed(&total);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(total, 1.020);
}
