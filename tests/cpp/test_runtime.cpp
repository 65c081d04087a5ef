// sim/runtime.h: the threads a scope asks for, and given back after it.
#include <gtest/gtest.h>

#include "sim/runtime.h"

namespace zl {

TEST(Runtime, ScopedThreadsSetsTheTeamForItsScopeAndGivesItBack) {
  const int before = at::get_num_threads();
  const int asked = before == 1 ? 2 : 1;
  {
    const ScopedThreads scope(asked);
    EXPECT_EQ(at::get_num_threads(), asked);
  }
  EXPECT_EQ(at::get_num_threads(), before);
  {
    const ScopedThreads scope(0);  // 0: left as they are
    EXPECT_EQ(at::get_num_threads(), before);
  }
  EXPECT_EQ(at::get_num_threads(), before);
}

}  // namespace zl
