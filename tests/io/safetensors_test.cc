// Safetensors headers, files and checkpoint folders: what the reader accepts, and that every
// malformed input is refused with a Status naming the file (and the tensor when there is one).
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/file.h"
#include "io/checkpoint.h"
#include "io/safetensors_writer.h"
#include "support/test_support.h"

namespace mtplx::io {
namespace {

namespace fs = std::filesystem;

constexpr char kLabel[] = "shard-00001-of-00002.safetensors";

// {"dtype": ..., "shape": ..., "data_offsets": ...} with the parts given as raw JSON.
std::string Entry(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return "{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

// A header holding one well-formed tensor "good" (F32 [2] at [0, 8)) and "bad" as given.
std::string WithBad(const std::string& bad_entry) {
  return "{\"good\":" + Entry("\"F32\"", "[2]", "[0,8]") + ",\"bad\":" + bad_entry + "}";
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The header must be refused as corrupt, naming the file, the tensor (when given) and `why`.
void ExpectBadHeader(const std::string& json, uint64_t data_size, const std::string& tensor,
                     const std::string& why) {
  SCOPED_TRACE(json);
  auto header = ParseSafetensorsHeader(json, data_size, kLabel);
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), StatusCode::kDataLoss);
  const std::string& message = header.status().message();
  EXPECT_TRUE(Contains(message, kLabel)) << message;
  if (!tensor.empty()) {
    EXPECT_TRUE(Contains(message, "'" + tensor + "'")) << message;
  }
  EXPECT_TRUE(Contains(message, why)) << message;
}

void ExpectBadEntry(const std::string& bad_entry, const std::string& why,
                    uint64_t data_size = 1024) {
  ExpectBadHeader(WithBad(bad_entry), data_size, "bad", why);
}

// --- ParseSafetensorsHeader: accepted headers --------------------------------------------------

TEST(SafetensorsHeaderTest, ParsesTensorsAndMetadata) {
  const std::string json =
      "{\"__metadata__\":{\"format\":\"mlx\",\"note\":\"hi\",\"ignored\":3},"
      "\"b.weight\":" +
      Entry("\"BF16\"", "[2,3]", "[24,36]") + "," +
      "\"a.weight\":" + Entry("\"F32\"", "[2,3]", "[0,24]") + "}";
  auto header = ParseSafetensorsHeader(json, 36, kLabel);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  ASSERT_EQ(header->tensors.size(), 2u);
  const TensorEntry& a = header->tensors.at("a.weight");
  EXPECT_EQ(a.dtype, DType::kF32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.begin, 0u);
  EXPECT_EQ(a.end, 24u);
  const TensorEntry& b = header->tensors.at("b.weight");
  EXPECT_EQ(b.dtype, DType::kBF16);
  EXPECT_EQ(b.begin, 24u);
  EXPECT_EQ(b.end, 36u);
  // Only string metadata is kept.
  EXPECT_EQ(header->metadata.size(), 2u);
  EXPECT_EQ(header->metadata.at("format"), "mlx");
  EXPECT_EQ(header->metadata.at("note"), "hi");
  EXPECT_EQ(header->tensors.count("__metadata__"), 0u);
}

TEST(SafetensorsHeaderTest, AcceptsEmptyHeaderAndEmptyMetadata) {
  auto empty = ParseSafetensorsHeader("{}", 0, kLabel);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->tensors.empty());
  EXPECT_TRUE(empty->metadata.empty());
  auto meta_only = ParseSafetensorsHeader("{\"__metadata__\":{}}", 0, kLabel);
  ASSERT_TRUE(meta_only.ok()) << meta_only.status().ToString();
  EXPECT_TRUE(meta_only->tensors.empty());
  // Surrounding whitespace (the writer pads the header with spaces) is fine.
  EXPECT_TRUE(ParseSafetensorsHeader("  {}       ", 0, kLabel).ok());
}

TEST(SafetensorsHeaderTest, AcceptsEveryDType) {
  const std::vector<std::pair<std::string, size_t>> dtypes = {
      {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"U32", 4}, {"I32", 4},
      {"I64", 8}, {"U8", 1},  {"I8", 1},   {"U16", 2}, {"I16", 2}, {"BOOL", 1}};
  std::string json = "{";
  uint64_t offset = 0;
  for (const auto& [name, size] : dtypes) {
    if (json.size() > 1) json += ",";
    json += "\"t_" + name + "\":" +
            Entry("\"" + name + "\"", "[3]",
                  "[" + std::to_string(offset) + "," + std::to_string(offset + 3 * size) + "]");
    offset += 3 * size;
  }
  json += "}";
  auto header = ParseSafetensorsHeader(json, offset, kLabel);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  ASSERT_EQ(header->tensors.size(), dtypes.size());
  for (const auto& [name, size] : dtypes) {
    const TensorEntry& e = header->tensors.at("t_" + name);
    EXPECT_EQ(DTypeName(e.dtype), name);
    EXPECT_EQ(DTypeSize(e.dtype), size);
    EXPECT_EQ(e.end - e.begin, 3 * size);
  }
}

TEST(SafetensorsHeaderTest, AcceptsEmptyAndScalarTensors) {
  // Empty tensors own no bytes, so they may sit anywhere (even inside another tensor's range).
  const std::string json = "{\"big\":" + Entry("\"F32\"", "[4]", "[0,16]") + "," +
                           "\"empty_a\":" + Entry("\"F32\"", "[0]", "[0,0]") + "," +
                           "\"empty_b\":" + Entry("\"BF16\"", "[3,0,5]", "[8,8]") + "," +
                           "\"empty_end\":" + Entry("\"I64\"", "[0]", "[20,20]") + "," +
                           "\"scalar\":" + Entry("\"F32\"", "[]", "[16,20]") + "}";
  auto header = ParseSafetensorsHeader(json, 20, kLabel);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(header->tensors.at("empty_b").shape, (std::vector<int64_t>{3, 0, 5}));
  EXPECT_TRUE(header->tensors.at("scalar").shape.empty());
  EXPECT_EQ(header->tensors.at("scalar").end - header->tensors.at("scalar").begin, 4u);
}

TEST(SafetensorsHeaderTest, AcceptsAdjacentTensorsInAnyOrderAndTrailingData) {
  const std::string json = "{\"c\":" + Entry("\"U8\"", "[4]", "[16,20]") + "," +
                           "\"a\":" + Entry("\"U8\"", "[8]", "[0,8]") + "," +
                           "\"b\":" + Entry("\"U8\"", "[8]", "[8,16]") + "}";
  EXPECT_TRUE(ParseSafetensorsHeader(json, 20, kLabel).ok());
  EXPECT_TRUE(ParseSafetensorsHeader(json, 64, kLabel).ok());  // bytes after the last tensor
}

// --- ParseSafetensorsHeader: refused headers ---------------------------------------------------

TEST(SafetensorsHeaderTest, RejectsTextThatIsNotJson) {
  ExpectBadHeader("", 0, "", "not valid JSON");
  ExpectBadHeader("{\"a\":", 0, "", "not valid JSON");
  ExpectBadHeader("{\"a\":{}} trailing", 0, "", "not valid JSON");
  ExpectBadHeader(std::string("{\"a\0\":1}", 8), 0, "", "not valid JSON");
  ExpectBadHeader("{\"\xff\xfe\":{}}", 0, "", "not valid JSON");  // invalid UTF-8
}

TEST(SafetensorsHeaderTest, RejectsJsonThatIsNotAnObject) {
  for (const char* json : {"[]", "[{}]", "null", "42", "\"header\"", "true"})
    ExpectBadHeader(json, 0, "", "not a JSON object");
}

TEST(SafetensorsHeaderTest, RejectsMetadataThatIsNotAnObject) {
  ExpectBadHeader("{\"__metadata__\":[1,2]}", 0, "", "__metadata__ is not an object");
  ExpectBadHeader("{\"__metadata__\":\"format\"}", 0, "", "__metadata__ is not an object");
}

TEST(SafetensorsHeaderTest, RejectsEntryThatIsNotAnObject) {
  for (const char* entry : {"[]", "null", "3", "\"F32\"", "[\"F32\",[2],[0,8]]"})
    ExpectBadEntry(entry, "not an object");
}

TEST(SafetensorsHeaderTest, RejectsMissingOrMistypedDType) {
  ExpectBadEntry("{\"shape\":[2],\"data_offsets\":[8,16]}", "missing dtype");
  ExpectBadEntry(Entry("null", "[2]", "[8,16]"), "missing dtype");
  ExpectBadEntry(Entry("4", "[2]", "[8,16]"), "missing dtype");
}

TEST(SafetensorsHeaderTest, RejectsUnknownDType) {
  for (const char* dtype : {"\"F8_E4M3\"", "\"f32\"", "\"\"", "\"FLOAT\"", "\"U64\""})
    ExpectBadEntry(Entry(dtype, "[2]", "[8,16]"), "unsupported dtype");
  ExpectBadEntry(Entry("\"F8_E4M3\"", "[2]", "[8,10]"), "'F8_E4M3'");
}

TEST(SafetensorsHeaderTest, RejectsMissingOrMistypedShape) {
  ExpectBadEntry("{\"dtype\":\"F32\",\"data_offsets\":[8,16]}", "missing shape");
  ExpectBadEntry(Entry("\"F32\"", "2", "[8,16]"), "missing shape");
  ExpectBadEntry(Entry("\"F32\"", "{\"0\":2}", "[8,16]"), "missing shape");
  ExpectBadEntry(Entry("\"F32\"", "null", "[8,16]"), "missing shape");
}

TEST(SafetensorsHeaderTest, RejectsNegativeAndNonIntegerDimensions) {
  for (const char* shape : {"[-1]", "[2,-2]", "[2.0]", "[1.5]", "[\"2\"]", "[null]", "[[2]]",
                            "[true]", "[18446744073709551615]", "[9223372036854775808]"})
    ExpectBadEntry(Entry("\"F32\"", shape, "[8,16]"), "bad dimension");
}

TEST(SafetensorsHeaderTest, RejectsShapesWhoseSizeOverflows) {
  // Element counts past 2^62 are refused outright.
  ExpectBadEntry(Entry("\"U8\"", "[4611686018427387904,4611686018427387904]", "[8,8]"),
                 "too large");
  ExpectBadEntry(Entry("\"U8\"", "[9223372036854775807]", "[8,8]"), "too large");
  ExpectBadEntry(Entry("\"U8\"", "[65536,65536,65536,65536,65536]", "[8,8]"), "too large");
  // Element counts that fit but whose byte count wraps around 2^64 must not be mistaken for a
  // zero-byte tensor: 2^62 F32 elements or 2^61 F64 elements "need" 2^64 = 0 (mod 2^64) bytes.
  ExpectBadEntry(Entry("\"F32\"", "[4611686018427387904]", "[8,8]"), "");
  ExpectBadEntry(Entry("\"F64\"", "[2305843009213693952]", "[8,8]"), "");
  ExpectBadEntry(Entry("\"F64\"", "[2147483648,1073741824]", "[8,8]"), "");
  ExpectBadEntry(Entry("\"BF16\"", "[4611686018427387904]", "[8,8]"), "");
  // ... nor as a tensor of a few bytes: 2^62 + 1 F32 elements "need" 4 bytes (mod 2^64).
  ExpectBadEntry(Entry("\"F32\"", "[4611686018427387905]", "[8,12]"), "");
}

TEST(SafetensorsHeaderTest, RejectsMissingOrMalformedDataOffsets) {
  const std::string why = "data_offsets must be";
  ExpectBadEntry("{\"dtype\":\"F32\",\"shape\":[2]}", why);
  for (const char* offsets : {"[]", "[8]", "[8,16,24]", "8", "null", "{\"0\":8,\"1\":16}"})
    ExpectBadEntry(Entry("\"F32\"", "[2]", offsets), why);
  for (const char* offsets :
       {"[-8,0]", "[8,-16]", "[8.0,16]", "[8,16.5]", "[\"8\",16]", "[null,16]", "[8,true]"})
    ExpectBadEntry(Entry("\"F32\"", "[2]", offsets), "non-negative integers");
}

TEST(SafetensorsHeaderTest, RejectsOffsetsEndingBeforeTheyBegin) {
  ExpectBadEntry(Entry("\"F32\"", "[2]", "[16,8]"), "end before begin");
  ExpectBadEntry(Entry("\"F32\"", "[0]", "[16,8]"), "end before begin");
}

TEST(SafetensorsHeaderTest, RejectsOffsetsPastTheData) {
  ExpectBadEntry(Entry("\"F32\"", "[2]", "[8,16]"), "run past the data", /*data_size=*/15);
  ExpectBadEntry(Entry("\"F32\"", "[2]", "[8,16]"), "truncated", /*data_size=*/12);
  ExpectBadEntry(Entry("\"F32\"", "[0]", "[9,9]"), "run past the data", /*data_size=*/8);
  ExpectBadEntry(Entry("\"F32\"", "[2]", "[18446744073709551608,18446744073709551615]"),
                 "run past the data");
}

TEST(SafetensorsHeaderTest, RejectsSizeThatDisagreesWithShapeAndDType) {
  ExpectBadEntry(Entry("\"F32\"", "[3]", "[8,16]"), "needs 12 bytes but data_offsets span 8");
  ExpectBadEntry(Entry("\"BF16\"", "[2,3]", "[8,16]"), "needs 12 bytes");
  ExpectBadEntry(Entry("\"F32\"", "[0]", "[8,16]"), "needs 0 bytes");
  ExpectBadEntry(Entry("\"F32\"", "[]", "[8,16]"), "needs 4 bytes");
  ExpectBadEntry(Entry("\"F64\"", "[1]", "[8,12]"), "needs 8 bytes but data_offsets span 4");
}

TEST(SafetensorsHeaderTest, RejectsOverlappingTensors) {
  // "good" is F32 [2] at [0, 8).
  ExpectBadEntry(Entry("\"F32\"", "[2]", "[4,12]"), "overlap");
  ExpectBadEntry(Entry("\"F32\"", "[2]", "[0,8]"), "overlap");   // the very same bytes
  ExpectBadEntry(Entry("\"U8\"", "[1]", "[3,4]"), "overlap");    // inside "good"
  ExpectBadEntry(Entry("\"U8\"", "[16]", "[0,16]"), "overlap");  // starts with "good"
  ExpectBadHeader(WithBad(Entry("\"F32\"", "[2]", "[4,12]")), 1024, "good", "overlap");
}

TEST(SafetensorsHeaderTest, RejectsOneTensorCoveringTwoOthers) {
  // small_a and small_b are disjoint; "big" spans both of them and the gap between.
  const std::string json = "{\"small_a\":" + Entry("\"F32\"", "[2]", "[8,16]") + "," +
                           "\"small_b\":" + Entry("\"F32\"", "[2]", "[24,32]") + "," +
                           "\"big\":" + Entry("\"F32\"", "[10]", "[0,40]") + "}";
  ExpectBadHeader(json, 64, "big", "overlap");
  // A wide tensor is remembered past the tensors that follow it in the data: "inner" sits
  // inside "wide" even though the tensor sorted next to it in the header is "x".
  const std::string json2 = "{\"wide\":" + Entry("\"U8\"", "[40]", "[0,40]") + "," +
                            "\"x\":" + Entry("\"U8\"", "[8]", "[40,48]") + "," +
                            "\"inner\":" + Entry("\"U8\"", "[4]", "[30,34]") + "}";
  ExpectBadHeader(json2, 64, "wide", "'inner'");
  // A narrow tensor after a wide one that already ended is fine.
  const std::string json3 = "{\"wide\":" + Entry("\"U8\"", "[40]", "[0,40]") + "," +
                            "\"after\":" + Entry("\"U8\"", "[4]", "[40,44]") + "}";
  EXPECT_TRUE(ParseSafetensorsHeader(json3, 64, kLabel).ok());
}

// --- Files ------------------------------------------------------------------------------------

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good());
}

std::string LengthPrefix(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

// A raw safetensors file: length prefix, header text, data.
void WriteRawFile(const std::string& path, const std::string& header, const std::string& data) {
  WriteBytes(path, LengthPrefix(header.size()) + header + data);
}

void ExpectReadHeaderFails(const std::string& path, StatusCode code, const std::string& why) {
  uint64_t offset = 0, size = 0;
  auto header = SafetensorsFile::ReadHeader(path, &offset, &size);
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().code(), code) << header.status().ToString();
  EXPECT_TRUE(Contains(header.status().message(), path)) << header.status().message();
  EXPECT_TRUE(Contains(header.status().message(), why)) << header.status().message();
  auto file = SafetensorsFile::Open(path, nullptr);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), code);
}

class SafetensorsFileTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return JoinPath(dir_, name); }
  std::string dir_ = testing::MakeTempDir("mtplx-safetensors");
};

TEST_F(SafetensorsFileTest, RejectsMissingFile) {
  ExpectReadHeaderFails(Path("absent.safetensors"), StatusCode::kNotFound, "absent.safetensors");
}

TEST_F(SafetensorsFileTest, RejectsFilesShorterThanTheLengthPrefix) {
  for (size_t n : {0, 1, 7}) {
    const std::string path = Path("short" + std::to_string(n) + ".safetensors");
    WriteBytes(path, std::string(n, '\x01'));
    ExpectReadHeaderFails(path, StatusCode::kDataLoss, "too short");
  }
}

TEST_F(SafetensorsFileTest, RejectsHeaderLengthLargerThanTheFile) {
  const std::string path = Path("long-header.safetensors");
  WriteBytes(path, LengthPrefix(100) + "{\"a\":1}");
  ExpectReadHeaderFails(path, StatusCode::kDataLoss, "header length 100");
  WriteBytes(path, LengthPrefix(~0ull) + "{}");
  ExpectReadHeaderFails(path, StatusCode::kDataLoss, "larger than the file allows");
  WriteBytes(path, LengthPrefix(kMaxHeaderBytes + 1) + "{}");
  ExpectReadHeaderFails(path, StatusCode::kDataLoss, "larger than the file allows");
  // One byte short of the declared header.
  WriteBytes(path, LengthPrefix(3) + "{}");
  ExpectReadHeaderFails(path, StatusCode::kDataLoss, "header length 3");
}

TEST_F(SafetensorsFileTest, RejectsEmptyOrGarbageHeaderText) {
  const std::string path = Path("garbage.safetensors");
  WriteBytes(path, LengthPrefix(0));
  ExpectReadHeaderFails(path, StatusCode::kDataLoss, "not valid JSON");
  WriteRawFile(path, "PK\x03\x04garbage", "");
  ExpectReadHeaderFails(path, StatusCode::kDataLoss, "not valid JSON");
}

TEST_F(SafetensorsFileTest, AcceptsAHeaderOnlyFile) {
  const std::string path = Path("header-only.safetensors");
  WriteRawFile(path, "{}", "");
  uint64_t offset = 0, size = 1;
  auto header = SafetensorsFile::ReadHeader(path, &offset, &size);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(offset, 10u);
  EXPECT_EQ(size, 0u);
  auto file = SafetensorsFile::Open(path, nullptr);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->resident_bytes(), 0u);
}

TEST_F(SafetensorsFileTest, ReadsAHandWrittenFile) {
  const std::string path = Path("raw.safetensors");
  const float values[3] = {1.5f, -2.0f, 3.25f};
  std::string data(reinterpret_cast<const char*>(values), sizeof(values));
  data += "\x07\x08";
  WriteRawFile(path,
               "{\"v\":" + Entry("\"F32\"", "[3]", "[0,12]") +
                   ",\"b\":" + Entry("\"U8\"", "[2]", "[12,14]") + "}",
               data);
  auto file = SafetensorsFile::Open(path, nullptr);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto v = (*file)->Get("v");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(std::memcmp(v->data, values, sizeof(values)), 0);
  auto b = (*file)->Get("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(static_cast<const uint8_t*>(b->data)[1], 8);
}

TEST_F(SafetensorsFileTest, RejectsTruncatedData) {
  const std::string path = Path("truncated.safetensors");
  SafetensorsWriter writer(path);
  writer.Declare("first", DType::kF32, {4});
  writer.Declare("last", DType::kF32, {4});
  ASSERT_TRUE(writer.Begin().ok());
  const std::vector<float> values(8, 1.0f);
  ASSERT_TRUE(writer.Append(values.data(), 32).ok());
  ASSERT_TRUE(writer.Finish().ok());
  fs::resize_file(path, fs::file_size(path) - 3);
  ExpectReadHeaderFails(path, StatusCode::kDataLoss, "'last'");
  ExpectReadHeaderFails(path, StatusCode::kDataLoss, "truncated");
  // Cutting into the header itself reads as a header length past the end of the file.
  fs::resize_file(path, 12);
  ExpectReadHeaderFails(path, StatusCode::kDataLoss, "larger than the file allows");
}

struct TestTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

std::vector<TestTensor> MakeTensors() {
  std::vector<TestTensor> tensors = {
      {"model.layers.0.self_attn.q_proj.weight", DType::kF32, {2, 3}, {}},
      {"model.layers.0.input_layernorm.weight", DType::kBF16, {5}, {}},  // 10 bytes: misaligned
      {"model.layers.0.mlp.gate.weight", DType::kU8, {3}, {}},
      {"model.embed_tokens.weight", DType::kI64, {2}, {}},
      {"empty", DType::kF32, {0, 4}, {}},
      {"model.norm.weight", DType::kF16, {1, 3}, {}},
      {"mask", DType::kBool, {2}, {}},
  };
  uint8_t next = 1;
  for (auto& t : tensors) {
    uint64_t n = DTypeSize(t.dtype);
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    t.bytes.resize(n);
    for (auto& b : t.bytes) b = next += 37;  // every byte value differs from its neighbours
  }
  return tensors;
}

TEST_F(SafetensorsFileTest, WriterRoundTripIsBitExact) {
  const std::string path = Path("roundtrip.safetensors");
  const std::vector<TestTensor> tensors = MakeTensors();
  uint64_t total = 0;
  {
    SafetensorsWriter writer(path);
    for (const auto& t : tensors) {
      writer.Declare(t.name, t.dtype, t.shape);
      total += t.bytes.size();
    }
    writer.SetMetadata("format", "mlx");
    writer.SetMetadata("producer", "mtplx test \"quoted\" \u00e9");
    EXPECT_EQ(writer.data_bytes(), total);
    ASSERT_EQ(writer.names().size(), tensors.size());
    ASSERT_TRUE(writer.Begin().ok());
    for (const auto& t : tensors) {
      // Append in two pieces where possible.
      const size_t half = t.bytes.size() / 2;
      ASSERT_TRUE(writer.Append(t.bytes.data(), half).ok());
      ASSERT_TRUE(writer.Append(t.bytes.data() + half, t.bytes.size() - half).ok());
    }
    ASSERT_TRUE(writer.Finish().ok());
  }

  // The data section starts 8-byte aligned and the file holds exactly the declared bytes.
  uint64_t data_offset = 0, data_size = 0;
  auto header = SafetensorsFile::ReadHeader(path, &data_offset, &data_size);
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(data_offset % 8, 0u);
  EXPECT_EQ(data_size, total);
  EXPECT_EQ(fs::file_size(path), data_offset + total);
  {
    std::ifstream in(path, std::ios::binary);
    unsigned char prefix[8];
    in.read(reinterpret_cast<char*>(prefix), 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
    EXPECT_EQ(n + 8, data_offset);
    EXPECT_EQ(n % 8, 0u);
  }

  auto file = SafetensorsFile::Open(path, nullptr);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->path(), path);
  EXPECT_EQ((*file)->resident_bytes(), total);
  EXPECT_EQ((*file)->header().metadata.at("format"), "mlx");
  EXPECT_EQ((*file)->header().metadata.at("producer"), "mtplx test \"quoted\" \u00e9");
  ASSERT_EQ((*file)->header().tensors.size(), tensors.size());
  uint64_t expected_begin = 0;
  for (const auto& t : tensors) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE((*file)->Has(t.name));
    const TensorEntry& entry = (*file)->header().tensors.at(t.name);
    EXPECT_EQ(entry.begin, expected_begin);  // declaration order, packed
    expected_begin += t.bytes.size();
    auto view = (*file)->Get(t.name);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_EQ(view->dtype, t.dtype);
    EXPECT_EQ(view->shape, t.shape);
    EXPECT_EQ(view->NumBytes(), t.bytes.size());
    if (!t.bytes.empty()) {
      EXPECT_EQ(std::memcmp(view->data, t.bytes.data(), t.bytes.size()), 0);
    }
  }

  auto missing = (*file)->Get("not.there");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), path));
  EXPECT_TRUE(Contains(missing.status().message(), "'not.there'"));
  EXPECT_FALSE((*file)->Has("not.there"));
  EXPECT_EQ((*file)->MutableData("not.there"), nullptr);

  // MutableData writes through to what Get sees.
  uint8_t* bytes = (*file)->MutableData("model.layers.0.mlp.gate.weight");
  ASSERT_NE(bytes, nullptr);
  bytes[1] = 0xAB;
  auto gate = (*file)->Get("model.layers.0.mlp.gate.weight");
  ASSERT_TRUE(gate.ok());
  EXPECT_EQ(static_cast<const uint8_t*>(gate->data)[1], 0xAB);
}

TEST_F(SafetensorsFileTest, WriterWithoutMetadataOrTensors) {
  const std::string path = Path("empty.safetensors");
  SafetensorsWriter writer(path);
  ASSERT_TRUE(writer.Begin().ok());
  ASSERT_TRUE(writer.Finish().ok());
  auto file = SafetensorsFile::Open(path, nullptr);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE((*file)->header().tensors.empty());
  EXPECT_TRUE((*file)->header().metadata.empty());
  EXPECT_EQ(fs::file_size(path) % 8, 0u);
}

TEST_F(SafetensorsFileTest, WriterRefusesWrongByteCounts) {
  {
    SafetensorsWriter writer(Path("over.safetensors"));
    writer.Declare("a", DType::kF32, {2});
    ASSERT_TRUE(writer.Begin().ok());
    const float values[3] = {};
    const Status over = writer.Append(values, sizeof(values));
    EXPECT_EQ(over.code(), StatusCode::kInternal);
    EXPECT_TRUE(Contains(over.message(), "more bytes than declared"));
  }
  {
    SafetensorsWriter writer(Path("under.safetensors"));
    writer.Declare("a", DType::kF32, {2});
    ASSERT_TRUE(writer.Begin().ok());
    const float value = 0;
    ASSERT_TRUE(writer.Append(&value, sizeof(value)).ok());
    const Status under = writer.Finish();
    EXPECT_EQ(under.code(), StatusCode::kInternal);
    EXPECT_TRUE(Contains(under.message(), "wrote 4 of 8"));
  }
  {
    SafetensorsWriter writer(Path("never.safetensors"));
    EXPECT_EQ(writer.Finish().code(), StatusCode::kInternal);
  }
  {
    SafetensorsWriter writer(Path("no-such-dir/x.safetensors"));
    const Status begin = writer.Begin();
    EXPECT_FALSE(begin.ok());
    EXPECT_TRUE(Contains(begin.message(), "no-such-dir/x.safetensors"));
  }
}

// --- Checkpoint folders -----------------------------------------------------------------------

// Writes a file holding F32 [2] tensors with the given names.
void WriteTensors(const std::string& path, const std::vector<std::string>& names,
                  float base = 0.0f) {
  SafetensorsWriter writer(path);
  for (const auto& n : names) writer.Declare(n, DType::kF32, {2});
  ASSERT_TRUE(writer.Begin().ok());
  for (size_t i = 0; i < names.size(); ++i) {
    const float values[2] = {base + static_cast<float>(i), -base};
    ASSERT_TRUE(writer.Append(values, sizeof(values)).ok());
  }
  ASSERT_TRUE(writer.Finish().ok());
}

Result<std::unique_ptr<Checkpoint>> OpenCheckpoint(const std::string& dir) {
  CheckpointOptions options;
  options.show_progress = false;
  options.lock_memory = false;
  return Checkpoint::Open(dir, options);
}

class CheckpointTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return JoinPath(dir_, name); }
  void WriteIndex(const std::string& weight_map_json) {
    ASSERT_TRUE(
        WriteTextFile(Path("model.safetensors.index.json"),
                      "{\"metadata\":{\"total_size\":0},\"weight_map\":" + weight_map_json + "}")
            .ok());
  }
  void ExpectOpenFails(StatusCode code, const std::vector<std::string>& needles) {
    auto checkpoint = OpenCheckpoint(dir_);
    ASSERT_FALSE(checkpoint.ok());
    EXPECT_EQ(checkpoint.status().code(), code) << checkpoint.status().ToString();
    for (const auto& n : needles)
      EXPECT_TRUE(Contains(checkpoint.status().message(), n)) << checkpoint.status().message();
  }
  std::string dir_ = testing::MakeTempDir("mtplx-checkpoint");
};

TEST_F(CheckpointTest, OpensASingleFile) {
  WriteTensors(Path("model.safetensors"), {"a", "b"}, 3.0f);
  auto checkpoint = OpenCheckpoint(dir_);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  EXPECT_EQ((*checkpoint)->dir(), dir_);
  EXPECT_EQ((*checkpoint)->Names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ((*checkpoint)->files().size(), 1u);
  EXPECT_EQ((*checkpoint)->resident_bytes(), 16u);
  auto b = (*checkpoint)->Get("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(static_cast<const float*>(b->data)[0], 4.0f);
  EXPECT_EQ((*checkpoint)->FileOf("a"), Path("model.safetensors"));
  EXPECT_EQ((*checkpoint)->FileOf("zzz"), dir_);
  EXPECT_EQ((*checkpoint)->format_metadata(), "");
  auto missing = (*checkpoint)->Get("zzz");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), "'zzz'"));
  EXPECT_EQ((*checkpoint)->MutableData("zzz"), nullptr);
  EXPECT_NE((*checkpoint)->MutableData("a"), nullptr);
}

TEST_F(CheckpointTest, OpensShardsListedByTheIndexAndAnMtpSidecar) {
  WriteTensors(Path("model-00001-of-00002.safetensors"), {"a"});
  WriteTensors(Path("model-00002-of-00002.safetensors"), {"b"});
  WriteTensors(Path("unlisted.safetensors"), {"a"});  // not in the index: ignored
  WriteTensors(Path("mtp.safetensors"), {"mtp.fc.weight"});
  WriteIndex(
      "{\"a\":\"model-00001-of-00002.safetensors\","
      "\"b\":\"model-00002-of-00002.safetensors\"}");
  auto files = ListCheckpointFiles(dir_);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(*files, (std::vector<std::string>{Path("model-00001-of-00002.safetensors"),
                                              Path("model-00002-of-00002.safetensors"),
                                              Path("mtp.safetensors")}));
  auto checkpoint = OpenCheckpoint(dir_);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  EXPECT_EQ((*checkpoint)->Names(), (std::vector<std::string>{"a", "b", "mtp.fc.weight"}));
  EXPECT_EQ((*checkpoint)->FileOf("b"), Path("model-00002-of-00002.safetensors"));
  EXPECT_EQ((*checkpoint)->FileOf("mtp.fc.weight"), Path("mtp.safetensors"));
}

TEST_F(CheckpointTest, WithoutAnIndexLoadsEverySafetensorsFileSorted) {
  WriteTensors(Path("b.safetensors"), {"y"});
  WriteTensors(Path("a.safetensors"), {"x"});
  ASSERT_TRUE(WriteTextFile(Path("notes.txt"), "not weights").ok());
  auto files = ListCheckpointFiles(dir_);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(*files, (std::vector<std::string>{Path("a.safetensors"), Path("b.safetensors")}));
}

TEST_F(CheckpointTest, RejectsATensorInTwoFilesNamingBoth) {
  WriteTensors(Path("a.safetensors"), {"shared.weight", "only_a"});
  WriteTensors(Path("b.safetensors"), {"only_b", "shared.weight"});
  ExpectOpenFails(StatusCode::kDataLoss,
                  {"'shared.weight'", Path("a.safetensors"), Path("b.safetensors")});
}

TEST_F(CheckpointTest, RejectsIndexEntriesThatLeaveTheFolder) {
  WriteTensors(Path("model.safetensors"), {"a"});
  for (const char* escape : {"../x.safetensors", "../../etc/passwd", "sub/../../x.safetensors",
                             "/etc/passwd", "/tmp/model.safetensors"}) {
    SCOPED_TRACE(escape);
    WriteIndex(std::string("{\"a\":\"model.safetensors\",\"b\":\"") + escape + "\"}");
    ExpectOpenFails(StatusCode::kDataLoss,
                    {escape, "leaves the model folder", "model.safetensors.index.json"});
  }
}

TEST_F(CheckpointTest, RejectsIndexListingAMissingFile) {
  WriteTensors(Path("model-00001-of-00002.safetensors"), {"a"});
  WriteIndex(
      "{\"a\":\"model-00001-of-00002.safetensors\","
      "\"b\":\"model-00002-of-00002.safetensors\"}");
  ExpectOpenFails(StatusCode::kNotFound,
                  {"model-00002-of-00002.safetensors", "missing", "model.safetensors.index.json"});
}

TEST_F(CheckpointTest, RejectsMalformedIndex) {
  WriteTensors(Path("model.safetensors"), {"a"});
  for (const char* index : {"not json", "[]", "{}", "{\"weight_map\":[]}"}) {
    SCOPED_TRACE(index);
    ASSERT_TRUE(WriteTextFile(Path("model.safetensors.index.json"), index).ok());
    ExpectOpenFails(StatusCode::kDataLoss, {"model.safetensors.index.json", "weight_map"});
  }
  WriteIndex("{\"a\":3}");
  ExpectOpenFails(StatusCode::kDataLoss, {"bad entry for 'a'"});
}

TEST_F(CheckpointTest, RejectsAFolderWithoutSafetensors) {
  ASSERT_TRUE(WriteTextFile(Path("config.json"), "{}").ok());
  ASSERT_TRUE(MakeDirectories(Path("sub.safetensors")).ok());  // a folder, not a file
  ExpectOpenFails(StatusCode::kNotFound, {dir_, "no .safetensors files"});
  auto files = ListCheckpointFiles(dir_);
  EXPECT_FALSE(files.ok());
}

TEST_F(CheckpointTest, RejectsAMissingFolder) {
  const std::string missing = Path("nope");
  auto files = ListCheckpointFiles(missing);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(files.status().message(), missing));
}

TEST_F(CheckpointTest, RejectsAnMtpFileOutsideTheFolder) {
  WriteTensors(Path("model.safetensors"), {"a"});
  const std::string outside = testing::MakeTempDir("mtplx-outside");
  WriteTensors(JoinPath(outside, "mtp.safetensors"), {"mtp.fc.weight"});
  const std::string relative = "../" + Basename(outside) + "/mtp.safetensors";
  for (const std::string& escape : {relative, JoinPath(outside, "mtp.safetensors")}) {
    SCOPED_TRACE(escape);
    ASSERT_TRUE(WriteTextFile(Path("config.json"),
                              "{\"mlx_lm_extra_tensors\":{\"mtp_file\":\"" + escape + "\"}}")
                    .ok());
    ExpectOpenFails(StatusCode::kDataLoss, {"config.json", escape, "leaves the model folder"});
  }
  // Inside the folder it is picked up.
  ASSERT_TRUE(MakeDirectories(Path("heads")).ok());
  WriteTensors(Path("heads/mtp-head.safetensors"), {"mtp.fc.weight"});
  ASSERT_TRUE(
      WriteTextFile(Path("config.json"),
                    "{\"mlx_lm_extra_tensors\":{\"mtp_file\":\"heads/mtp-head.safetensors\"}}")
          .ok());
  auto checkpoint = OpenCheckpoint(dir_);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  EXPECT_EQ((*checkpoint)->FileOf("mtp.fc.weight"), Path("heads/mtp-head.safetensors"));
}

TEST_F(CheckpointTest, ReportsACorruptShardByName) {
  WriteTensors(Path("a.safetensors"), {"x"});
  WriteBytes(Path("b.safetensors"), "\x03");
  ExpectOpenFails(StatusCode::kDataLoss, {Path("b.safetensors"), "too short"});
}

}  // namespace
}  // namespace mtplx::io
