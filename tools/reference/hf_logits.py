#!/usr/bin/env python3
"""Reference logits from Hugging Face transformers' own Qwen3.5 / Qwen3.5-MoE / Qwen3-Next code.

The forward math is transformers' (`Qwen3_5ForCausalLM`, `Qwen3_5MoeForCausalLM`,
`Qwen3NextForCausalLM`, loaded with `from_pretrained`, including transformers' own checkpoint
conversion: the `model.language_model.` prefix change of the multimodal wrapper and the
per-expert -> fused expert merge of Qwen3-Next). Nothing here re-implements the model. What this
file adds is paranoia around it:

* the model runs in float32 (bf16 weights upcast exactly), eval mode, eager attention, eager
  experts;
* every tensor of the checkpoint except `mtp.*` (and `model.visual.*`, which the text model does
  not have) is checked to be consumed and to equal the loaded parameter bit for bit after the
  f32 upcast, and every parameter of the model is checked to be covered by the file;
* the zero-centred RMSNorm convention, y = x / rms(x) * (1 + w), and the gated norm's plain w
  are checked on the norms' actual inputs and outputs during the forward;
* logits come from one forward over the whole sequence (prefill: transformers' chunked gated
  delta rule, torch fallback when flash-linear-attention is absent) and, separately, from a
  token-by-token decode through transformers' own cache (recurrent delta rule, conv update).

Diagnostics: `--float64` also runs the same transformers code in float64 (every explicit float32
cast redirected) to measure how far each f32 result is from the exact value.

Usage:
  hf_logits.py --model DIR --tokens 1,2,3 [--out FILE] [--decode-out FILE] [--float64]
writes f32 little-endian [rows, vocab] and prints a JSON summary.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402

# architecture in config.json -> (transformers CausalLM class, config class)
ARCHITECTURES = {
    "Qwen3_5ForConditionalGeneration": ("Qwen3_5ForCausalLM", "Qwen3_5TextConfig"),
    "Qwen3_5ForCausalLM": ("Qwen3_5ForCausalLM", "Qwen3_5TextConfig"),
    "Qwen3_5MoeForConditionalGeneration": ("Qwen3_5MoeForCausalLM", "Qwen3_5MoeTextConfig"),
    "Qwen3_5MoeForCausalLM": ("Qwen3_5MoeForCausalLM", "Qwen3_5MoeTextConfig"),
    "Qwen3NextForCausalLM": ("Qwen3NextForCausalLM", "Qwen3NextConfig"),
}

IGNORED_PREFIXES = ("mtp.", "model.visual.", "model.language_model.visual.")
PER_EXPERT = re.compile(r"^(model\.layers\.\d+\.mlp\.experts)\.(\d+)\.(gate|up|down)_proj\.weight$")


class ReferenceError(RuntimeError):
    pass


def versions() -> dict:
    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
    }


def _read_checkpoint(model_dir: str) -> dict[str, torch.Tensor]:
    files = sorted(glob.glob(os.path.join(model_dir, "*.safetensors")))
    if not files:
        raise ReferenceError(f"{model_dir}: no *.safetensors")
    tensors = {}
    for path in files:
        with safe_open(path, framework="pt") as f:
            for name in f.keys():
                if name in tensors:
                    raise ReferenceError(f"{name} appears in two files")
                tensors[name] = f.get_tensor(name)
    return tensors


def load_model(model_dir: str):
    """Builds the transformers model for a checkpoint folder, f32, eval mode.

    Returns (model, report) and raises ReferenceError when anything was not consumed exactly.
    """
    with open(os.path.join(model_dir, "config.json")) as f:
        raw = json.load(f)
    arch = (raw.get("architectures") or [None])[0]
    if arch not in ARCHITECTURES:
        raise ReferenceError(f"unsupported architecture {arch!r}")
    model_cls_name, config_cls_name = ARCHITECTURES[arch]
    model_cls = getattr(transformers, model_cls_name)
    config_cls = getattr(transformers, config_cls_name)
    # The text config classes know their base_config_key ("text_config") and read the nested
    # block of the multimodal wrapper themselves.
    config = config_cls.from_pretrained(model_dir)
    model, info = model_cls.from_pretrained(
        model_dir,
        config=config,
        dtype=torch.float32,
        attn_implementation="eager",
        experts_implementation="eager",
        output_loading_info=True,
    )
    model.eval()
    problems = {k: sorted(v) for k, v in info.items() if k != "error_msgs" and v}
    if problems or info.get("error_msgs"):
        raise ReferenceError(f"transformers loading problems: {problems} {info.get('error_msgs')}")

    report = {"architecture": arch, "model_class": model_cls_name, "config_class": config_cls_name}
    report.update(_verify_weights(model, _read_checkpoint(model_dir), config))
    return model, report


def _verify_weights(model, tensors: dict[str, torch.Tensor], config) -> dict:
    """Every non-MTP tensor of the file equals the loaded f32 parameter exactly, and every
    parameter element comes from the file."""
    params = dict(model.named_parameters(remove_duplicate=False))
    for name, p in params.items():
        if p.dtype != torch.float32:
            raise ReferenceError(f"parameter {name} is {p.dtype}, not float32")
    covered = {name: torch.zeros(p.shape, dtype=torch.bool) for name, p in params.items()}
    ignored, consumed, dtypes = [], 0, {}

    def take(param_name: str, index, value: torch.Tensor, file_name: str):
        if param_name not in params:
            raise ReferenceError(f"checkpoint tensor {file_name} has no model parameter ({param_name})")
        target = params[param_name].detach()[index]
        if tuple(target.shape) != tuple(value.shape):
            raise ReferenceError(f"{file_name}: shape {tuple(value.shape)} vs parameter {tuple(target.shape)}")
        upcast = value.to(torch.float32)
        if not torch.equal(target, upcast):
            raise ReferenceError(f"{file_name}: parameter differs from the f32 upcast of the file tensor")
        if value.dtype == torch.bfloat16 and not torch.equal(upcast.to(torch.bfloat16), value):
            raise ReferenceError(f"{file_name}: bf16 -> f32 upcast is not exact")
        covered[param_name][index] = True

    for file_name, value in tensors.items():
        dtypes[str(value.dtype).replace("torch.", "")] = dtypes.get(str(value.dtype).replace("torch.", ""), 0) + 1
        if file_name.startswith(IGNORED_PREFIXES):
            ignored.append(file_name)
            continue
        name = file_name
        if name.startswith("model.language_model."):
            name = "model." + name[len("model.language_model."):]
        m = PER_EXPERT.match(name)
        if m:
            base, expert, kind = m.group(1), int(m.group(2)), m.group(3)
            inter = value.shape[0] if kind != "down" else value.shape[1]
            if kind == "gate":
                take(base + ".gate_up_proj", (expert, slice(0, inter)), value, file_name)
            elif kind == "up":
                take(base + ".gate_up_proj", (expert, slice(inter, 2 * inter)), value, file_name)
            else:
                take(base + ".down_proj", (expert,), value, file_name)
        else:
            take(name, (), value, file_name)
        consumed += 1

    tied = bool(getattr(config, "tie_word_embeddings", False))
    if tied:
        if model.lm_head.weight is not model.model.embed_tokens.weight:
            raise ReferenceError("tie_word_embeddings is set but lm_head is not the embedding")
        covered["lm_head.weight"] = covered["model.embed_tokens.weight"]
    uncovered = [n for n, c in covered.items() if not bool(c.all())]
    if uncovered:
        raise ReferenceError(f"parameters not (fully) loaded from the checkpoint: {uncovered}")
    other_ignored = [n for n in ignored if not n.startswith("mtp.")]
    return {
        "checkpoint_tensors": len(tensors),
        "consumed_tensors": consumed,
        "ignored_mtp_tensors": len(ignored) - len(other_ignored),
        "ignored_vision_tensors": len(other_ignored),
        "checkpoint_dtypes": dtypes,
        "model_parameters": len(params),
        "tied_embeddings": tied,
    }


class NormChecker:
    """Hooks on every RMSNorm: records the worst deviation of the module output from
    x/rms(x)*(1+w) (zero-centred norms) or from the gated formula with a plain w."""

    def __init__(self, model, eps: float):
        self.eps = eps
        self.handles = []
        self.zero_centred = {"count": 0, "max_err_one_plus_w": 0.0, "max_err_plain_w": 0.0,
                             "max_abs_w": 0.0}
        self.gated = {"count": 0, "max_err_plain_w": 0.0, "max_err_one_plus_w": 0.0}
        for name, module in model.named_modules():
            cls = type(module).__name__
            if cls.endswith("RMSNormGated"):
                self.handles.append(module.register_forward_hook(self._gated))
            elif cls.endswith("RMSNorm"):
                self.handles.append(module.register_forward_hook(self._zero_centred))

    def _normed(self, x):
        x = x.double()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def _zero_centred(self, module, args, out):
        n, w, y = self._normed(args[0]), module.weight.double(), out.double()
        scale = n.abs().max().item() * (1 + w.abs().max().item())
        s = self.zero_centred
        s["count"] += 1
        s["max_abs_w"] = max(s["max_abs_w"], w.abs().max().item())
        s["max_err_one_plus_w"] = max(s["max_err_one_plus_w"], ((y - n * (1 + w)).abs().max() / scale).item())
        s["max_err_plain_w"] = max(s["max_err_plain_w"], ((y - n * w).abs().max() / scale).item())

    def _gated(self, module, args, out):
        x, gate = args
        n, w, y = self._normed(x), module.weight.double(), out.double()
        g = torch.nn.functional.silu(gate.double())
        scale = (n.abs().max() * w.abs().max().clamp(min=1) * g.abs().max()).item()
        s = self.gated
        s["count"] += 1
        s["max_err_plain_w"] = max(s["max_err_plain_w"], ((y - n * w * g).abs().max() / scale).item())
        s["max_err_one_plus_w"] = max(s["max_err_one_plus_w"], ((y - n * (1 + w) * g).abs().max() / scale).item())

    def close(self):
        for h in self.handles:
            h.remove()

    def verdict(self) -> dict:
        zc, g = self.zero_centred, self.gated
        ok = (zc["count"] > 0 and zc["max_err_one_plus_w"] < 1e-6 and zc["max_err_plain_w"] > 1e-3
              and g["count"] > 0 and g["max_err_plain_w"] < 1e-6 and g["max_err_one_plus_w"] > 1e-3)
        return {"zero_centred": zc, "gated": g, "convention_ok": ok}


class RouterMargins:
    """Hooks on the MoE routers: the smallest gap between the k-th and (k+1)-th router logit of
    any token in any layer. A gap far above f32 noise means no implementation can route a token
    differently (ties or near-ties would make the goldens fragile, spec section 2.6)."""

    def __init__(self, model):
        self.min_logit_gap = None
        self.calls = 0
        self.handles = [m.register_forward_hook(self._hook) for m in model.modules()
                        if type(m).__name__.endswith("TopKRouter")]

    def _hook(self, module, args, out):
        logits = out[0].double().sort(dim=-1, descending=True).values
        k = module.top_k
        gap = (logits[:, k - 1] - logits[:, k]).min().item()
        self.calls += 1
        self.min_logit_gap = gap if self.min_logit_gap is None else min(self.min_logit_gap, gap)

    def close(self):
        for h in self.handles:
            h.remove()

    def report(self) -> dict | None:
        if not self.calls:
            return None
        return {"router_calls": self.calls, "min_topk_logit_gap": self.min_logit_gap}


@torch.no_grad()
def prefill_logits(model, tokens: list[int], check_norms: bool = True):
    """One forward over the whole sequence, no cache: [rows, vocab] float32 numpy, plus the norm
    convention verdict and router margins."""
    ids = torch.tensor([tokens], dtype=torch.long)
    checker = NormChecker(model, model.config.rms_norm_eps) if check_norms else None
    routers = RouterMargins(model)
    try:
        out = model(input_ids=ids, use_cache=False)
    finally:
        if checker:
            checker.close()
        routers.close()
    logits = out.logits[0].to(torch.float32).numpy()
    return logits, (checker.verdict() if checker else None), routers.report()


@torch.no_grad()
def decode_logits(model, tokens: list[int]):
    """Token-by-token through transformers' own cache (recurrent delta rule, conv update)."""
    rows, cache = [], None
    for i, t in enumerate(tokens):
        ids = torch.tensor([[t]], dtype=torch.long)
        if cache is None:
            out = model(input_ids=ids, use_cache=True)
        else:
            out = model(input_ids=ids, cache=cache, use_cache=True)
        cache = out.cache
        if cache is None:
            raise ReferenceError("transformers returned no cache")
        rows.append(out.logits[0, -1].to(torch.float32).numpy())
    if cache.get_seq_length() != len(tokens):
        raise ReferenceError(f"cache length {cache.get_seq_length()} after {len(tokens)} tokens")
    return np.stack(rows)


@torch.no_grad()
def hidden_states(model, tokens: list[int]) -> list[np.ndarray]:
    """Residual stream after the embedding and after every decoder layer (prefill), for
    layer-by-layer debugging."""
    ids = torch.tensor([tokens], dtype=torch.long)
    captured = []
    handles = [layer.register_forward_hook(lambda m, a, o: captured.append(
        (o[0] if isinstance(o, tuple) else o)[0].to(torch.float32).numpy().copy()))
        for layer in model.model.layers]
    try:
        emb = model.model.embed_tokens(ids)[0].numpy().copy()
        model(input_ids=ids, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    return [emb] + captured


class _Float64Everywhere:
    """Diagnostics only (never used for goldens): runs transformers' forward with every explicit
    float32 cast in its code (norms, gates, delta rule, softmax) redirected to float64, so a
    `model.double()` copy computes the same math in float64. Used to tell which f32
    implementation is closer to the exact value when the two disagree."""

    def __enter__(self):
        T, F = torch.Tensor, torch.nn.functional
        self.saved = (T.float, T.to, F.softmax)
        orig_to, orig_softmax = T.to, F.softmax

        def to(self_, *args, **kwargs):
            args = tuple(torch.float64 if a is torch.float32 else a for a in args)
            if kwargs.get("dtype") is torch.float32:
                kwargs["dtype"] = torch.float64
            return orig_to(self_, *args, **kwargs)

        def softmax(x, *args, **kwargs):
            if kwargs.get("dtype") is torch.float32:
                kwargs["dtype"] = torch.float64
            return orig_softmax(x, *args, **kwargs)

        T.float = lambda self_, *a, **k: orig_to(self_, torch.float64)
        T.to = to
        F.softmax = softmax
        return self

    def __exit__(self, *exc):
        torch.Tensor.float, torch.Tensor.to, torch.nn.functional.softmax = self.saved
        return False


@torch.no_grad()
def float64_logits(model, tokens: list[int]) -> np.ndarray:
    """Prefill logits of transformers' code evaluated in float64 (diagnostics)."""
    import copy

    m64 = copy.deepcopy(model).double()
    # inv_freq was computed in f32 at construction: recompute it in f64 from the same formula.
    for mod in m64.modules():
        if hasattr(mod, "inv_freq") and hasattr(mod, "rope_type"):
            cfg = mod.config
            rp = getattr(cfg, "rope_parameters", None) or {}
            base = rp.get("rope_theta", getattr(cfg, "rope_theta", None))
            factor = rp.get("partial_rotary_factor", getattr(cfg, "partial_rotary_factor", 1.0))
            dim = int(cfg.head_dim * factor)
            mod.inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    ids = torch.tensor([tokens], dtype=torch.long)
    with _Float64Everywhere():
        out = m64(input_ids=ids, use_cache=False)
    if out.logits.dtype != torch.float64:
        raise ReferenceError("float64 diagnostic run did not stay in float64")
    return out.logits[0].numpy()


def relative_error_per_position(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """max_v |got - want| / max_v |want| for each row."""
    got = got.astype(np.float64)
    want = want.astype(np.float64)
    return np.abs(got - want).max(axis=1) / np.maximum(np.abs(want).max(axis=1), 1e-30)


def reference(model_dir: str, tokens: list[int], decode: bool = True, float64: bool = False) -> dict:
    model, report = load_model(model_dir)
    vocab = model.config.vocab_size
    if any(t < 0 or t >= vocab for t in tokens):
        raise ReferenceError("token outside the vocabulary")
    prefill, norms, routers = prefill_logits(model, tokens)
    if not norms["convention_ok"]:
        raise ReferenceError(f"unexpected norm convention: {norms}")
    if routers and routers["min_topk_logit_gap"] < 1e-4:
        raise ReferenceError(f"near-tie in MoE routing, pick other tokens: {routers}")
    result = {"model": model_dir, "rows": len(tokens), "vocab": vocab, "load": report,
              "norms": norms, "routers": routers, "prefill": prefill, "versions": versions()}
    if decode:
        dec = decode_logits(model, tokens)
        rel = relative_error_per_position(dec, prefill)
        result["decode"] = dec
        result["decode_vs_prefill_max_rel"] = float(rel.max())
        result["decode_vs_prefill_worst_position"] = int(rel.argmax())
    if float64:
        exact = float64_logits(model, tokens)
        result["float64"] = exact
        result["prefill_vs_float64_max_rel"] = float(relative_error_per_position(prefill, exact).max())
        if decode:
            result["decode_vs_float64_max_rel"] = float(
                relative_error_per_position(result["decode"], exact).max())
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint folder (config.json + *.safetensors)")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--out", help="write prefill logits, f32 little-endian [rows, vocab]")
    ap.add_argument("--decode-out", help="write token-by-token decode logits likewise")
    ap.add_argument("--no-decode", action="store_true", help="skip the step-by-step decode check")
    ap.add_argument("--float64", action="store_true",
                    help="also report the f32 logits' error against the same code run in float64")
    args = ap.parse_args()
    torch.manual_seed(0)
    tokens = [int(t) for t in args.tokens.split(",") if t.strip()]
    try:
        r = reference(args.model, tokens, decode=not args.no_decode, float64=args.float64)
    except ReferenceError as e:
        print(f"hf_logits: FAILED: {e}", file=sys.stderr)
        return 1
    if args.out:
        r["prefill"].astype("<f4").tofile(args.out)
    if args.decode_out and "decode" in r:
        r["decode"].astype("<f4").tofile(args.decode_out)
    summary = {k: v for k, v in r.items() if k not in ("prefill", "decode", "float64")}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
