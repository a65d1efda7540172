#include "io/runtime_contract.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/file.h"
#include "base/strings.h"

#ifndef MTPLX_VERSION
#define MTPLX_VERSION "0.0.0"
#endif

namespace mtplx::io {
namespace {

using Json = nlohmann::json;

class Reader {
 public:
  Reader(const Json& root, const std::string& path) : root_(root), path_(path) {}

  Status Refuse(const std::string& key, const std::string& why) const {
    return InvalidArgument(StrCat(path_, ": '", key, "' ", why));
  }
  const Json* Find(const Json& object, const char* key) const {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  }
  Status RequiredString(const char* key, std::string& out) const {
    const Json* v = Find(root_, key);
    if (!v) return Refuse(key, "is required and missing");
    if (!v->is_string() || v->get<std::string>().empty())
      return Refuse(key, "must be a non-empty string");
    out = v->get<std::string>();
    return Status::Ok();
  }
  Status OptionalString(const char* key, std::optional<std::string>& out) const {
    const Json* v = Find(root_, key);
    if (!v) return Status::Ok();
    if (!v->is_string() || v->get<std::string>().empty())
      return Refuse(key, "must be a non-empty string");
    out = v->get<std::string>();
    return Status::Ok();
  }
  // An integer in [lo, hi] at object[key] (named `name` in messages).
  Status Integer(const Json& object, const char* key, const std::string& name, int lo, int hi,
                 std::optional<int>& out) const {
    const Json* v = Find(object, key);
    if (!v) return Status::Ok();
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi)
      return Refuse(name, StrCat("must be an integer from ", lo, " to ", hi));
    out = v->get<int>();
    return Status::Ok();
  }
  Status OneOf(const Json& object, const char* key, const std::string& name,
               const std::vector<std::string>& allowed) const {
    const Json* v = Find(object, key);
    if (!v) return Status::Ok();
    if (v->is_string())
      for (const std::string& a : allowed)
        if (v->get<std::string>() == a) return Status::Ok();
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "\"" : ", \"") + a + "\"";
    return Refuse(name, "must be one of " + list);
  }
  // A sampler object: temperature >= 0, 0 < top_p <= 1, top_k >= 0, min_p in [0, 1], penalties
  // finite.
  Status Sampler(const char* key) const {
    const Json* s = Find(root_, key);
    if (!s) return Status::Ok();
    if (!s->is_object()) return Refuse(key, "must be an object");
    auto number = [&](const char* field, double lo, double hi) -> Status {
      const Json* v = Find(*s, field);
      if (!v) return Status::Ok();
      if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < lo ||
          v->get<double>() > hi)
        return Refuse(StrCat(key, ".", field), StrCat("must be a number from ", lo, " to ", hi));
      return Status::Ok();
    };
    MTPLX_RETURN_IF_ERROR(number("temperature", 0, 100));
    MTPLX_RETURN_IF_ERROR(number("top_p", 1e-9, 1));
    MTPLX_RETURN_IF_ERROR(number("min_p", 0, 1));
    MTPLX_RETURN_IF_ERROR(number("presence_penalty", -2, 2));
    MTPLX_RETURN_IF_ERROR(number("frequency_penalty", -2, 2));
    std::optional<int> top_k;
    return Integer(*s, "top_k", StrCat(key, ".top_k"), 0, 1 << 24, top_k);
  }
  const Json& root() const { return root_; }

 private:
  const Json& root_;
  const std::string& path_;
};

Status ReadMtpContract(const Reader& r, RuntimeContract& c) {
  const Json* m = r.Find(r.root(), "mtp_contract");
  if (!m) return Status::Ok();
  if (!m->is_object()) return r.Refuse("mtp_contract", "must be an object");
  for (const char* key : {"hidden_variant", "base_hidden_variant"})
    MTPLX_RETURN_IF_ERROR(
        r.OneOf(*m, key, StrCat("mtp_contract.", key), {"post_norm", "pre_norm"}));
  MTPLX_RETURN_IF_ERROR(r.OneOf(*m, "concat_order", "mtp_contract.concat_order",
                                {"embedding_hidden", "hidden_embedding"}));
  MTPLX_RETURN_IF_ERROR(r.OneOf(*m, "mtp_quant_mode", "mtp_contract.mtp_quant_mode", {"affine"}));
  MTPLX_RETURN_IF_ERROR(
      r.Integer(*m, "mtp_quant_bits", "mtp_contract.mtp_quant_bits", 0, 16, c.mtp_quant_bits));
  if (c.mtp_quant_bits && *c.mtp_quant_bits != 0 && *c.mtp_quant_bits != 16 &&
      (*c.mtp_quant_bits < 2 || *c.mtp_quant_bits == 7 || *c.mtp_quant_bits > 8))
    return r.Refuse("mtp_contract.mtp_quant_bits", "must be 0 (not quantized), 2-6, 8 or 16");
  std::optional<int> group;
  MTPLX_RETURN_IF_ERROR(
      r.Integer(*m, "mtp_quant_group_size", "mtp_contract.mtp_quant_group_size", 0, 1024, group));
  if (group && *group != 0 && *group != 32 && *group != 64 && *group != 128)
    return r.Refuse("mtp_contract.mtp_quant_group_size", "must be 32, 64 or 128");
  return Status::Ok();
}

Status ReadDraftHead(const Reader& r) {
  const Json* h = r.Find(r.root(), "recommended_draft_lm_head");
  if (!h) return Status::Ok();
  if (!h->is_object()) return r.Refuse("recommended_draft_lm_head", "must be an object");
  std::optional<int> bits, group;
  MTPLX_RETURN_IF_ERROR(r.Integer(*h, "bits", "recommended_draft_lm_head.bits", 2, 8, bits));
  MTPLX_RETURN_IF_ERROR(
      r.Integer(*h, "group_size", "recommended_draft_lm_head.group_size", 32, 128, group));
  if (group && *group != 32 && *group != 64 && *group != 128)
    return r.Refuse("recommended_draft_lm_head.group_size", "must be 32, 64 or 128");
  return r.OneOf(*h, "mode", "recommended_draft_lm_head.mode", {"affine"});
}

}  // namespace

const char* EngineVersion() { return MTPLX_VERSION; }

int CompareVersions(const std::string& a, const std::string& b) {
  auto parts = [](const std::string& v) {
    std::vector<long> out;
    long n = 0;
    bool digits = false;
    for (char ch : v) {
      if (ch >= '0' && ch <= '9') {
        n = n * 10 + (ch - '0');
        digits = true;
      } else if (ch == '.') {
        out.push_back(n);
        n = 0;
        digits = false;
      } else {
        break;  // "-dev", "+build"
      }
    }
    if (digits || out.empty()) out.push_back(n);
    return out;
  };
  std::vector<long> x = parts(a), y = parts(b);
  const size_t n = std::max(x.size(), y.size());
  x.resize(n, 0);
  y.resize(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

Result<RuntimeContract> ParseRuntimeContract(const std::string& json_text, const std::string& path,
                                             const std::string& engine_version) {
  const Json root = Json::parse(json_text, nullptr, false);
  if (root.is_discarded() || !root.is_object())
    return InvalidArgument(StrCat(path, ": not a JSON object"));
  const Reader r(root, path);
  RuntimeContract c;
  c.path = path;
  MTPLX_RETURN_IF_ERROR(r.RequiredString("mtplx_version", c.mtplx_version));
  MTPLX_RETURN_IF_ERROR(r.RequiredString("arch_id", c.arch_id));
  MTPLX_RETURN_IF_ERROR(r.RequiredString("recommended_profile", c.recommended_profile));
  if (!r.Find(root, "mtp_depth_max")) return r.Refuse("mtp_depth_max", "is required and missing");
  std::optional<int> depth_max;
  MTPLX_RETURN_IF_ERROR(r.Integer(root, "mtp_depth_max", "mtp_depth_max", 1, 16, depth_max));
  c.mtp_depth_max = *depth_max;
  for (const char* key : {"exactness_baseline", "verified_on"}) {
    const Json* v = r.Find(root, key);
    if (!v) return r.Refuse(key, "is required and missing");
    if (!v->is_object() && !v->is_string()) return r.Refuse(key, "must be an object or a string");
  }
  MTPLX_RETURN_IF_ERROR(r.Integer(root, "mtp_depth_default", "mtp_depth_default", 1,
                                  c.mtp_depth_max, c.mtp_depth_default));
  MTPLX_RETURN_IF_ERROR(r.Sampler("sampler"));
  MTPLX_RETURN_IF_ERROR(r.Sampler("recommended_draft_sampler"));
  MTPLX_RETURN_IF_ERROR(ReadDraftHead(r));
  MTPLX_RETURN_IF_ERROR(ReadMtpContract(r, c));
  MTPLX_RETURN_IF_ERROR(r.OptionalString("served_model_id", c.served_model_id));
  MTPLX_RETURN_IF_ERROR(r.OptionalString("min_engine_version", c.min_engine_version));
  MTPLX_RETURN_IF_ERROR(
      r.OneOf(root, "precision_variant", "precision_variant", {"bf16", "fp16", "f32", "fp32"}));
  MTPLX_RETURN_IF_ERROR(r.OptionalString("precision_variant", c.precision_variant));
  MTPLX_RETURN_IF_ERROR(
      r.Integer(root, "mtp_tensor_count", "mtp_tensor_count", 0, 1 << 20, c.mtp_tensor_count));
  if (const Json* caps = r.Find(root, "capabilities")) {
    if (!caps->is_object()) return r.Refuse("capabilities", "must be an object");
    if (const Json* mtp = r.Find(*caps, "mtp")) {
      if (!mtp->is_boolean()) return r.Refuse("capabilities.mtp", "must be true or false");
      c.has_mtp = mtp->get<bool>();
    }
  }
  if (c.min_engine_version && CompareVersions(*c.min_engine_version, engine_version) > 0)
    return FailedPrecondition(StrCat(path, ": 'min_engine_version' is ", *c.min_engine_version,
                                     ": this pack needs a newer mtplx (this is ", engine_version,
                                     ")"));
  return c;
}

Status CheckMtpTensors(const RuntimeContract& c, bool has_mtp, int64_t mtp_tensors) {
  if (c.has_mtp && *c.has_mtp && !has_mtp)
    return InvalidArgument(
        StrCat(c.path, ": 'capabilities.mtp' is true but the checkpoint has no MTP tensors"));
  if (c.mtp_tensor_count && *c.mtp_tensor_count != mtp_tensors)
    return InvalidArgument(StrCat(c.path, ": 'mtp_tensor_count' is ", *c.mtp_tensor_count,
                                  " but the checkpoint has ", mtp_tensors, " MTP tensors"));
  return Status::Ok();
}

Result<std::optional<RuntimeContract>> LoadRuntimeContract(const std::string& dir,
                                                           const std::string& engine_version) {
  const std::string path = JoinPath(dir, "mtplx_runtime.json");
  if (!FileExists(path)) return std::optional<RuntimeContract>();
  MTPLX_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path));
  MTPLX_ASSIGN_OR_RETURN(RuntimeContract c, ParseRuntimeContract(text, path, engine_version));
  return std::optional<RuntimeContract>(std::move(c));
}

}  // namespace mtplx::io
