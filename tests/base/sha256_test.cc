// SHA-256 against the FIPS 180-4 / NIST example digests, fed whole and in awkward pieces.
#include "base/sha256.h"

#include <gtest/gtest.h>

#include <string>

#include "base/file.h"
#include "support/test_support.h"

namespace mtplx {
namespace {

std::string Digest(const std::string& text) {
  Sha256 hash;
  hash.Update(text);
  return hash.HexDigest();
}

TEST(Sha256Test, KnownDigests) {
  EXPECT_EQ(Digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Digest(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, PiecewiseUpdatesGiveTheSameDigest) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7 + 3);
  Sha256 hash;
  for (size_t at = 0, step = 1; at < text.size(); at += step, step = step % 97 + 13)
    hash.Update(text.substr(at, step));
  EXPECT_EQ(hash.HexDigest(), Digest(text));
}

TEST(Sha256Test, FileDigestMatchesTheTextDigest) {
  const std::string path = testing::MakeTempDir("mtplx-sha") + "/data.bin";
  ASSERT_TRUE(WriteTextFile(path, std::string(20 << 20, 'x') + "tail").ok());
  auto digest = Sha256File(path);
  ASSERT_TRUE(digest.ok()) << digest.status().ToString();
  EXPECT_EQ(*digest, Digest(std::string(20 << 20, 'x') + "tail"));
  EXPECT_FALSE(Sha256File(path + ".missing").ok());
}

}  // namespace
}  // namespace mtplx
