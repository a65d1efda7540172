// The model loader enforces the pack's runtime contract: a contract that contradicts the tensors
// (MTP claimed but absent, MTP tensors miscounted, their quantization misstated) or needs a newer
// engine is refused with a message naming the key; the bundled pack loads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/model.h"
#include "support/test_support.h"

namespace mtplx::model {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// The bundled pack with its contract edited: links to every other file.
std::string PackWithContract(const std::function<void(Json&)>& edit) {
  const std::string from = testing::TrainedModelDir();
  const std::string dir = testing::MakeTempDir("mtplx-contract-");
  for (const auto& entry : fs::directory_iterator(from))
    if (entry.path().filename() != "mtplx_runtime.json")
      fs::create_symlink(entry.path(), fs::path(dir) / entry.path().filename());
  std::ifstream in(from + "/mtplx_runtime.json");
  std::stringstream text;
  text << in.rdbuf();
  Json contract = Json::parse(text.str());
  edit(contract);
  std::ofstream(dir + "/mtplx_runtime.json") << contract.dump(2);
  return dir;
}

Status LoadStatus(const std::string& dir) {
  LoadOptions options;
  options.show_progress = false;
  auto m = Model::Load(dir, options);
  return m.ok() ? Status::Ok() : m.status();
}

TEST(ContractTest, TheLoaderRefusesAContractThatContradictsTheTensors) {
  if (!fs::exists(testing::TrainedModelDir() + "/config.json")) GTEST_SKIP() << "no bundled model";
  EXPECT_TRUE(LoadStatus(PackWithContract([](Json&) {})).ok());
  const std::pair<std::function<void(Json&)>, const char*> cases[] = {
      {[](Json& j) { j["mtp_tensor_count"] = 5; },
       "'mtp_tensor_count' is 5 but the checkpoint has 31 MTP tensors"},
      {[](Json& j) { j["mtp_contract"]["mtp_quant_bits"] = 4; },
       "'mtp_contract.mtp_quant_bits' is 4 but the MTP layer's weights are 8-bit"},
      {[](Json& j) { j["min_engine_version"] = "99.0"; }, "'min_engine_version' is 99.0"},
      {[](Json& j) { j.erase("verified_on"); }, "'verified_on' is required and missing"},
  };
  for (const auto& [edit, message] : cases) {
    const Status s = LoadStatus(PackWithContract(edit));
    ASSERT_FALSE(s.ok()) << message;
    EXPECT_NE(s.message().find(message), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("mtplx_runtime.json"), std::string::npos) << s.message();
  }
}

TEST(ContractTest, MtpClaimedButAbsent) {
  if (!fs::exists(testing::TrainedModelDir() + "/config.json")) GTEST_SKIP() << "no bundled model";
  // Without its sidecar the pack has no MTP head, yet the contract still claims one.
  const std::string dir = PackWithContract([](Json&) {});
  fs::remove(fs::path(dir) / "mtp.safetensors");
  const Status s = LoadStatus(dir);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'capabilities.mtp' is true but the checkpoint has no MTP tensors"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace mtplx::model
