// Atomic output folders: refusals, replacement, and clean-up when the work fails.
#include "pack/staging.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "base/file.h"
#include "support/test_support.h"

namespace mtplx::pack {
namespace {

namespace fs = std::filesystem;

int Entries(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(StagingTest, CommitMovesTheFolderIntoPlace) {
  const std::string root = testing::MakeTempDir("mtplx-staging");
  const std::string out = root + "/nested/pack";
  {
    auto staging = StagingDir::Create(out, false);
    ASSERT_TRUE(staging.ok()) << staging.status().ToString();
    EXPECT_FALSE(fs::exists(out));
    ASSERT_TRUE(WriteTextFile(staging->path() + "/a.txt", "a").ok());
    ASSERT_TRUE(staging->Commit().ok());
  }
  EXPECT_TRUE(FileExists(out + "/a.txt"));
  EXPECT_EQ(Entries(root + "/nested"), 1);  // no staging sibling left behind
}

TEST(StagingTest, AnUncommittedFolderIsRemoved) {
  const std::string root = testing::MakeTempDir("mtplx-staging");
  {
    auto staging = StagingDir::Create(root + "/pack", false);
    ASSERT_TRUE(staging.ok());
    ASSERT_TRUE(WriteTextFile(staging->path() + "/half.safetensors", "x").ok());
  }
  EXPECT_EQ(Entries(root), 0);
}

TEST(StagingTest, ANonEmptyFolderNeedsReplace) {
  const std::string root = testing::MakeTempDir("mtplx-staging");
  ASSERT_TRUE(MakeDirectories(root + "/pack").ok());
  ASSERT_TRUE(WriteTextFile(root + "/pack/old.txt", "old").ok());
  auto refused = StagingDir::Create(root + "/pack", false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--force"), std::string::npos);
  EXPECT_EQ(Entries(root), 1);

  auto staging = StagingDir::Create(root + "/pack/", true);
  ASSERT_TRUE(staging.ok());
  ASSERT_TRUE(WriteTextFile(staging->path() + "/new.txt", "new").ok());
  ASSERT_TRUE(staging->Commit().ok());
  EXPECT_TRUE(FileExists(root + "/pack/new.txt"));
  EXPECT_FALSE(FileExists(root + "/pack/old.txt"));
  EXPECT_EQ(Entries(root), 1);
}

TEST(StagingTest, AnEmptyFolderOrAFileDestination) {
  const std::string root = testing::MakeTempDir("mtplx-staging");
  ASSERT_TRUE(MakeDirectories(root + "/empty").ok());
  auto staging = StagingDir::Create(root + "/empty", false);
  ASSERT_TRUE(staging.ok());
  ASSERT_TRUE(staging->Commit().ok());
  ASSERT_TRUE(WriteTextFile(root + "/file", "x").ok());
  auto refused = StagingDir::Create(root + "/file", true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not a folder"), std::string::npos);
}

}  // namespace
}  // namespace mtplx::pack
