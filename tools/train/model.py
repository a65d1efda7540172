"""Qwen 3.5 dense model plus one jointly trained MTP layer, built from transformers' own classes.

The trunk is `transformers.Qwen3_5ForCausalLM` (Gated DeltaNet + gated attention, zero-centred
RMSNorms, partial RoPE). The MTP head follows ../../../shared/spec/qwen35-architecture.md §3:

    u   = fc( concat( pre_fc_norm_embedding(embed(t_{p+1})), pre_fc_norm_hidden(h_p) ) )   # [emb | hid]
    m_p = norm( DecoderLayer_full_attention(u) )          # RoPE position p, own causal attention
    logits(t_{p+2}) = lm_head(m_p)                        # shared (tied) head

where h_p is the trunk's POST-final-norm hidden (the vector fed to lm_head). Parameter names match
the Hugging Face checkpoint layout (`mtp.fc.weight`, `mtp.layers.0.self_attn.q_proj.weight`, ...).
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers.models.qwen3_5 import modeling_qwen3_5 as qm
from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig


@dataclass
class ModelSpec:
    vocab_size: int = 12288
    hidden_size: int = 320
    num_hidden_layers: int = 8
    full_attention_interval: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 64
    linear_num_key_heads: int = 4
    linear_num_value_heads: int = 8
    linear_key_head_dim: int = 64
    linear_value_head_dim: int = 64
    linear_conv_kernel_dim: int = 4
    intermediate_size: int = 896
    rope_theta: float = 10000000.0
    partial_rotary_factor: float = 0.25
    max_position_embeddings: int = 32768
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True
    # special ids, filled in from the tokenizer
    eos_token_id: int = 0
    bos_token_id: int | None = None
    pad_token_id: int | None = None

    def layer_types(self):
        return ["full_attention" if (i + 1) % self.full_attention_interval == 0 else "linear_attention"
                for i in range(self.num_hidden_layers)]

    def rotary_dim(self):
        return int(self.head_dim * self.partial_rotary_factor)

    def mrope_section(self):
        # Qwen ratio 11:11:10 of rotary_dim/2 frequencies; pure text makes the split irrelevant
        # (all three axes carry the same position), but the sum must equal rotary_dim/2.
        half = self.rotary_dim() // 2
        t = round(half * 11 / 32)
        h = round(half * 11 / 32)
        return [t, h, half - t - h]

    def text_config_dict(self):
        return {
            "model_type": "qwen3_5_text",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers,
            "layer_types": self.layer_types(),
            "full_attention_interval": self.full_attention_interval,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "attn_output_gate": True,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "linear_num_key_heads": self.linear_num_key_heads,
            "linear_num_value_heads": self.linear_num_value_heads,
            "linear_key_head_dim": self.linear_key_head_dim,
            "linear_value_head_dim": self.linear_value_head_dim,
            "linear_conv_kernel_dim": self.linear_conv_kernel_dim,
            "intermediate_size": self.intermediate_size,
            "hidden_act": "silu",
            "mlp_only_layers": [],
            "rms_norm_eps": self.rms_norm_eps,
            "max_position_embeddings": self.max_position_embeddings,
            "partial_rotary_factor": self.partial_rotary_factor,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": self.rope_theta,
                "partial_rotary_factor": self.partial_rotary_factor,
                "mrope_section": self.mrope_section(),
                "mrope_interleaved": True,
            },
            "mtp_num_hidden_layers": 1,
            "mtp_use_dedicated_embeddings": False,
            "mamba_ssm_dtype": "float32",
            "output_gate_type": "swish",
            "tie_word_embeddings": self.tie_word_embeddings,
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_id,
            "pad_token_id": self.pad_token_id,
            "initializer_range": 0.02,
            "use_cache": True,
        }

    def hf_config(self) -> Qwen3_5TextConfig:
        d = self.text_config_dict()
        keep = {k: v for k, v in d.items() if k not in (
            "model_type", "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings", "mamba_ssm_dtype",
            "output_gate_type", "attn_output_gate", "mlp_only_layers", "partial_rotary_factor")}
        cfg = Qwen3_5TextConfig(**keep)
        cfg._attn_implementation = "sdpa"
        return cfg


class MtpHead(nn.Module):
    """One MTP layer (spec §3): norms, fc over [embedding | hidden], a full-attention decoder layer."""

    def __init__(self, cfg: Qwen3_5TextConfig):
        super().__init__()
        h = cfg.hidden_size
        mcfg = copy.deepcopy(cfg)
        mcfg.num_hidden_layers = 1
        mcfg.layer_types = ["full_attention"]
        mcfg._attn_implementation = "sdpa"
        self.pre_fc_norm_embedding = qm.Qwen3_5RMSNorm(h, eps=cfg.rms_norm_eps)
        self.pre_fc_norm_hidden = qm.Qwen3_5RMSNorm(h, eps=cfg.rms_norm_eps)
        self.fc = nn.Linear(2 * h, h, bias=False)
        self.layers = nn.ModuleList([qm.Qwen3_5DecoderLayer(mcfg, 0)])
        self.norm = qm.Qwen3_5RMSNorm(h, eps=cfg.rms_norm_eps)

    def forward(self, hidden, next_embeds, position_embeddings):
        """hidden: [B, T, H] trunk post-norm hiddens h_p; next_embeds: [B, T, H] embed(t_{p+1}).
        Returns the normed MTP output m_p [B, T, H] (feed to lm_head for t_{p+2})."""
        u = torch.cat([self.pre_fc_norm_embedding(next_embeds), self.pre_fc_norm_hidden(hidden)], dim=-1)
        x = self.fc(u)
        x = self.layers[0](x, position_embeddings=position_embeddings, attention_mask=None)
        return self.norm(x)


class Qwen35WithMtp(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        cfg = spec.hf_config()
        self.config = cfg
        self.lm = qm.Qwen3_5ForCausalLM(cfg)  # .model.* (trunk) and .lm_head (tied to embed_tokens)
        self.mtp = MtpHead(cfg)
        self._init_weights()

    def _init_weights(self):
        std = 0.02
        n_layers = self.spec.num_hidden_layers + 1
        for name, p in self.named_parameters():
            if p.dim() == 2 and "embed_tokens" not in name:
                nn.init.normal_(p, std=std)
                # GPT-2 style scaling of the residual output projections
                if name.endswith(("o_proj.weight", "out_proj.weight", "down_proj.weight")):
                    with torch.no_grad():
                        p.mul_(1.0 / math.sqrt(2 * n_layers))
        nn.init.normal_(self.lm.model.embed_tokens.weight, std=std)
        # GDN decays: A in (1, 16) as transformers, dt_bias so softplus(dt_bias) spans a useful range
        for layer in self.lm.model.layers:
            if hasattr(layer, "linear_attn"):
                la = layer.linear_attn
                with torch.no_grad():
                    la.A_log.copy_(torch.empty_like(la.A_log).uniform_(1.0, 16.0).log())
                    dt = torch.exp(torch.empty_like(la.dt_bias).uniform_(math.log(1e-3), math.log(1e-1)))
                    la.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus
                    la.norm.weight.fill_(1.0)
        # zero-centred norms start at 0 ((1+w) = 1)
        for m in self.modules():
            if isinstance(m, qm.Qwen3_5RMSNorm):
                nn.init.zeros_(m.weight)
        if self.spec.tie_word_embeddings:
            self.lm.lm_head.weight = self.lm.model.embed_tokens.weight

    def trunk(self, input_ids):
        """Returns (post-norm hiddens [B,T,H], position_embeddings for positions 0..T-1)."""
        m = self.lm.model
        embeds = m.embed_tokens(input_ids)
        b, t = input_ids.shape
        pos = torch.arange(t, device=input_ids.device).view(1, 1, -1).expand(3, b, -1)
        pe = m.rotary_emb(embeds, pos)
        x = embeds
        for layer in m.layers:
            x = layer(x, position_embeddings=pe, attention_mask=None)
        return m.norm(x), pe, embeds

    def forward(self, tokens, mtp_weight: float = 0.5):
        """tokens: [B, T+1]. Returns (total loss, trunk CE, MTP CE)."""
        inp, tgt = tokens[:, :-1], tokens[:, 1:]
        h, pe, embeds = self.trunk(inp)
        logits = self.lm.lm_head(h)
        ce = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tgt.reshape(-1))
        if mtp_weight <= 0:
            return ce, ce.detach(), torch.zeros(())
        # MTP: position p pairs (h_p, t_{p+1}) -> t_{p+2}, p = 0..T-2
        t = inp.shape[1]
        nxt = embeds[:, 1:]                        # embed(t_{p+1}) for p = 0..T-2
        cos, sin = pe
        m = self.mtp(h[:, :-1], nxt, (cos[:, : t - 1], sin[:, : t - 1]))
        mlogits = self.lm.lm_head(m)
        mce = F.cross_entropy(mlogits.float().reshape(-1, mlogits.shape[-1]), tgt[:, 1:].reshape(-1))
        return ce + mtp_weight * mce, ce.detach(), mce.detach()


def count_params(model: nn.Module):
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
    return total


def spec_to_json(spec: ModelSpec) -> str:
    return json.dumps(asdict(spec), indent=2)


def spec_from_dict(d: dict) -> ModelSpec:
    return ModelSpec(**d)


# ---------------------------------------------------------------------------------------------
# Training-time Gated DeltaNet kernel.
#
# transformers' torch fallback (`torch_chunk_gated_delta_rule`) solves the chunk's unit lower
# triangular system with torch.linalg.solve_triangular, which on CPU runs one LAPACK call per
# (batch, head, chunk) matrix and dominates a training step. This function is the same chunked
# algorithm (same math, same argument contract) with the triangular inverse computed by recursive
# 2x2 blocking down to 16x16 blocks, each inverted as a finite Neumann product (exact: the strictly
# lower part is nilpotent), so it is all batched matmuls. Export and verification use transformers'
# original function; tests/compare in train.py check the two agree.
# ---------------------------------------------------------------------------------------------

def _unit_lower_inverse(n_strict: torch.Tensor) -> torch.Tensor:
    """(I + N)^-1 for strictly lower triangular N [..., n, n]."""
    n = n_strict.shape[-1]
    eye = torch.eye(n, dtype=n_strict.dtype, device=n_strict.device)
    if n <= 16:
        p = -n_strict
        x = eye + p
        pk = p
        k = 2
        while k < n:
            pk = pk @ pk
            x = x + x @ pk
            k *= 2
        return x
    h = n // 2
    ai = _unit_lower_inverse(n_strict[..., :h, :h])
    di = _unit_lower_inverse(n_strict[..., h:, h:])
    c = n_strict[..., h:, :h]
    low = -(di @ (c @ ai))
    zeros = torch.zeros_like(c.transpose(-1, -2))
    top = torch.cat([ai, zeros], dim=-1)
    bot = torch.cat([low, di], dim=-1)
    return torch.cat([top, bot], dim=-2)


def fast_chunk_gated_delta_rule(query, key, value, g, beta, chunk_size=64, initial_state=None,
                                output_final_state=False, use_qk_l2norm_in_kernel=False, **kwargs):
    initial_dtype = query.dtype
    batch_size, sequence_length, num_k_heads, k_head_dim = key.shape
    num_v_heads, v_head_dim = value.shape[-2:]
    if num_k_heads != num_v_heads:
        query = query.repeat_interleave(num_v_heads // num_k_heads, dim=2)
        key = key.repeat_interleave(num_v_heads // num_k_heads, dim=2)
    query, key, value, beta, decay = [
        x.transpose(1, 2).to(torch.float32, memory_format=torch.contiguous_format)
        for x in (query, key, value, beta, g)]
    if use_qk_l2norm_in_kernel:
        query = qm.l2norm(query, dim=-1, eps=1e-6)
        key = qm.l2norm(key, dim=-1, eps=1e-6)
    query = query * (query.shape[-1] ** -0.5)
    pad = (chunk_size - sequence_length % chunk_size) % chunk_size
    query, key, value = (F.pad(x, (0, 0, 0, pad)) for x in (query, key, value))
    beta, decay = (F.pad(x, (0, pad)) for x in (beta, decay))
    total = sequence_length + pad
    n_chunks = total // chunk_size
    v_beta = value * beta.unsqueeze(-1)
    k_beta = key * beta.unsqueeze(-1)
    query, key, k_beta, v_beta = [x.reshape(x.shape[0], x.shape[1], -1, chunk_size, x.shape[-1])
                                  for x in (query, key, k_beta, v_beta)]
    decay = decay.reshape(decay.shape[0], decay.shape[1], -1, chunk_size)
    upper = torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=query.device).triu(1)
    strict_lower = torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=query.device).tril(-1)
    cum = decay.cumsum(dim=3)
    pairwise = (cum.unsqueeze(4) - cum.unsqueeze(3)).masked_fill(upper, float("-inf")).exp()
    ut = ((k_beta @ key.transpose(-1, -2)) * pairwise).masked_fill(~strict_lower, 0.0)
    intra = (query @ key.transpose(-1, -2)) * pairwise
    decayed_k_beta = k_beta * cum.exp().unsqueeze(-1)
    tinv = _unit_lower_inverse(ut)
    rhs = torch.cat([v_beta, decayed_k_beta], dim=-1)
    sol = tinv @ rhs
    new_values, k_cumdecay = sol[..., :v_head_dim], sol[..., v_head_dim:]
    if initial_state is None:
        state = torch.zeros(batch_size, num_v_heads, k_head_dim, v_head_dim, dtype=torch.float32,
                            device=query.device)
    else:
        state = initial_state.to(torch.float32)
    query = query * cum.exp().unsqueeze(-1)
    key = key * (cum[..., -1:] - cum).exp().unsqueeze(-1)
    chunk_decay = cum[..., -1].exp()[..., None, None]
    outs = []
    for i in range(n_chunks):
        v_new = new_values[:, :, i] - k_cumdecay[:, :, i] @ state
        outs.append(query[:, :, i] @ state + intra[:, :, i] @ v_new)
        state = state * chunk_decay[:, :, i] + key[:, :, i].transpose(-1, -2) @ v_new
    out = torch.stack(outs, dim=2).reshape(batch_size, num_v_heads, -1, v_head_dim)[:, :, :sequence_length]
    out = out.transpose(1, 2).to(initial_dtype, memory_format=torch.contiguous_format)
    return out, (state if output_final_state else None)


_ORIGINAL_CHUNK = qm.torch_chunk_gated_delta_rule


def use_fast_gdn(enabled: bool = True):
    """Swap transformers' chunked GDN fallback for the batched-matmul version (training only)."""
    qm.torch_chunk_gated_delta_rule = fast_chunk_gated_delta_rule if enabled else _ORIGINAL_CHUNK
