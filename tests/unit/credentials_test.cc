// --zk-auth-file: what a good credentials file is, and what each bad one is told.
#include "sidecar/zk/credentials.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace fencekeeper::zk {
namespace {

class CredentialsFileTest : public ::testing::Test {
 protected:
  CredentialsFileTest() {
    char dir[] = "/tmp/fk-cred-XXXXXX";
    dir_ = mkdtemp(dir);
  }
  ~CredentialsFileTest() override {
    std::remove(path().c_str());
    rmdir(dir_.c_str());
  }
  std::string path() const { return dir_ + "/zk-auth"; }
  std::string write(const std::string& text, mode_t mode = 0600) {
    std::ofstream(path(), std::ios::binary | std::ios::trunc) << text;
    chmod(path().c_str(), mode);
    return path();
  }
  // The error readCredentialsFile() throws, or "" when it reads the file.
  std::string refusal(const std::string& file) {
    try {
      readCredentialsFile(file);
      return "";
    } catch (const std::runtime_error& e) {
      return e.what();
    }
  }

  std::string dir_;
};

TEST_F(CredentialsFileTest, OneLineUserColonPassword) {
  auto c = readCredentialsFile(write("app:s3cret\n"));
  EXPECT_EQ(c.user, "app");
  EXPECT_EQ(c.password, "s3cret");
  EXPECT_EQ(c.secret(), "app:s3cret");
  EXPECT_EQ(readCredentialsFile(write("app:s3cret")).password, "s3cret");
  EXPECT_EQ(readCredentialsFile(write("app:s3cret\r\n")).password, "s3cret");
  EXPECT_EQ(readCredentialsFile(write("app:pass:with:colons\n")).password, "pass:with:colons");
  EXPECT_EQ(readCredentialsFile(write("app:s3cret\n", 0640)).user, "app") << "group may read";
}

TEST_F(CredentialsFileTest, OtherUsersMayNotReadIt) {
  EXPECT_NE(refusal(write("app:s3cret\n", 0644)).find("mode 0644 lets every user read it"),
            std::string::npos);
  EXPECT_NE(refusal(write("app:s3cret\n", 0602)).find("chmod o-rwx"), std::string::npos);
}

TEST_F(CredentialsFileTest, MalformedContentIsRefused) {
  for (const char* text :
       {"", "\n", "app\n", ":s3cret\n", "app:\n", "app:s3cret\nmore\n", "app:s3\rcret\n"}) {
    EXPECT_NE(refusal(write(text)).find("expected one line user:password"), std::string::npos)
        << "'" << text << "'";
  }
  EXPECT_NE(refusal(write(std::string("app:s3\0cret", 11))).find("expected one line"),
            std::string::npos);
  EXPECT_NE(refusal(write(std::string(5000, 'a'))).find("longer than 4096"), std::string::npos);
}

TEST_F(CredentialsFileTest, AMissingFileOrADirectoryIsRefusedNamingThePath) {
  EXPECT_EQ(refusal(dir_ + "/none"), "--zk-auth-file " + dir_ + "/none: No such file or directory");
  EXPECT_NE(refusal(dir_).find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace fencekeeper::zk
