// A fresh directory per test, under $ZL_TEST_TMP when CTest sets it (other
// tests share that directory, hence mkdtemp inside it), else under /tmp.
// Kept when the test failed, for a look at the files.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "zl_test") {
    namespace fs = std::filesystem;
    const char* base = std::getenv("ZL_TEST_TMP");
    fs::path root = base != nullptr && *base != '\0' ? fs::path(base) : fs::path("/tmp");
    fs::create_directories(root);
    std::string pattern = (root / (prefix + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed under " + root.string());
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};
