#include "base/file_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "base/temp_dir.h"

namespace eroica {
namespace {

std::string Slurp(const std::string& path) {
  StatusOr<std::string> text = ReadSmallFile(path);
  return text.ok() ? *text : "(" + text.status().message() + ")";
}

TEST(FileUtilTest, WritesThroughNoPlantedTemporary) {
  TempDir dir;
  std::string victim = dir.Write("victim", "precious");
  std::string target = dir.path() + "/out";
  // The old writer used the fixed name PATH.tmp: a symlink there redirected the write.
  ASSERT_EQ(::symlink(victim.c_str(), (target + ".tmp").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(target, "new").ok());
  EXPECT_EQ(Slurp(victim), "precious");
  EXPECT_EQ(Slurp(target), "new");
  struct stat info {};
  ASSERT_EQ(::stat(target.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  // No temporaries left behind but the planted one.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) entries += e.exists() ? 1 : 0;
  EXPECT_EQ(entries, 3);
}

TEST(FileUtilTest, RenameReplacesASymlinkTargetNotItsVictim) {
  TempDir dir;
  std::string victim = dir.Write("victim", "precious");
  std::string target = dir.path() + "/out";
  ASSERT_EQ(::symlink(victim.c_str(), target.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(target, "new").ok());
  EXPECT_EQ(Slurp(victim), "precious");
}

TEST(FileUtilTest, ReadRefusesFifosSymlinksAndOversizedFiles) {
  TempDir dir;
  std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> read = ReadSmallFile(fifo);  // the old reader blocked here forever
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("FIFO"), std::string::npos) << read.status().message();

  std::string link = dir.path() + "/zero";
  ASSERT_EQ(::symlink("/dev/zero", link.c_str()), 0);
  EXPECT_FALSE(ReadSmallFile(link).ok());
  EXPECT_FALSE(ReadSmallFile("/dev/zero").ok());
  EXPECT_FALSE(ReadSmallFile(dir.path()).ok());
  std::string big = dir.Write("big", std::string(100, 'x'));
  EXPECT_FALSE(ReadSmallFile(big, 99).ok());
  EXPECT_EQ(Slurp(big).size(), 100u);
}

TEST(FileUtilTest, AbandonedWriterLeavesNothing) {
  TempDir dir;
  std::string target = dir.path() + "/out";
  {
    StatusOr<AtomicFileWriter> writer = AtomicFileWriter::Create(target);
    ASSERT_TRUE(writer.ok());
    std::fputs("half", writer->stream());
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(FileUtilTest, OwnDirectoryIsCreatedPrivateAndForeignOnesRefused) {
  TempDir dir;
  std::string own = dir.path() + "/a/b";
  ASSERT_TRUE(EnsureOwnDirectory(own).ok());
  struct stat info {};
  ASSERT_EQ(::stat(own.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);
  EXPECT_TRUE(EnsureOwnDirectory(own).ok());

  std::string open = dir.path() + "/open";
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  Status refused = EnsureOwnDirectory(open);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("writable by every user"), std::string::npos);
  ASSERT_EQ(::chmod(open.c_str(), 01777), 0);
  EXPECT_TRUE(EnsureOwnDirectory(open).ok());  // sticky, like /tmp

  EXPECT_FALSE(EnsureOwnDirectory(dir.Write("file", "x")).ok());
  if (::geteuid() == 0) {
    std::string foreign = dir.path() + "/foreign";
    ASSERT_EQ(::mkdir(foreign.c_str(), 0700), 0);
    ASSERT_EQ(::chown(foreign.c_str(), 12345, 12345), 0);
    Status other = EnsureOwnDirectory(foreign);
    ASSERT_FALSE(other.ok());
    EXPECT_NE(other.message().find("owned by uid 12345"), std::string::npos);
  }
}

}  // namespace
}  // namespace eroica
