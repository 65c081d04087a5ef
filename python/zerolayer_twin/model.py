"""The baseline decoder-only transformer in eager PyTorch.

Shapes: B batch, T time, C width, H heads, D head width, V vocabulary.
Parameter names match the C++ module tree, so a C++ checkpoint loads as is.
"""
import configparser
import glob
import math
import os
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TwinConfig:
    vocab: int = 257
    layers: int = 4
    heads: int = 4
    dim: int = 128
    context: int = 128
    mlp_ratio: int = 4


class Attention(nn.Module):
    def __init__(self, c: TwinConfig):
        super().__init__()
        self.c = c
        self.qkv = nn.Linear(c.dim, 3 * c.dim, bias=False)
        self.proj = nn.Linear(c.dim, c.dim, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(c.context, c.context, dtype=torch.bool)), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        H, D = self.c.heads, C // self.c.heads
        q, k, v = self.qkv(x).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)  # each [B,H,T,D]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))  # [B,H,T,T]
        att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        y = F.softmax(att, dim=-1) @ v  # [B,H,T,D]
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

    def forward_cached(self, x, past):
        """x [B,T,C]: a prompt (past None) or one new token per sequence; past (k, v) each [B,H,L,D]."""
        B, T, C = x.shape
        H, D = self.c.heads, C // self.c.heads
        q, k, v = self.qkv(x).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)  # each [B,H,1,D]
        if past is not None:
            k = torch.cat([past[0], k], dim=2)  # [B,H,L+1,D]
            v = torch.cat([past[1], v], dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))  # [B,H,T,L+T]
        if T > 1:
            assert past is None, "several new tokens only for a prompt"
            att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # [B,H,T,D]
        return self.proj(y.transpose(1, 2).reshape(B, T, C)), (k, v)


class Mlp(nn.Module):
    def __init__(self, c: TwinConfig):
        super().__init__()
        self.fc = nn.Linear(c.dim, c.mlp_ratio * c.dim, bias=False)
        self.proj = nn.Linear(c.mlp_ratio * c.dim, c.dim, bias=False)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, c: TwinConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(c.dim)
        self.attn = Attention(c)
        self.ln2 = nn.LayerNorm(c.dim)
        self.mlp = Mlp(c)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))

    def forward_cached(self, x, past):
        a, past = self.attn.forward_cached(self.ln1(x), past)
        x = x + a
        return x + self.mlp(self.ln2(x)), past


class Twin(nn.Module):
    def __init__(self, c: TwinConfig):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c.vocab, c.dim)
        self.wpe = nn.Embedding(c.context, c.dim)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.dim)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * c.layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx):  # idx [B,T] -> logits [B,T,V]
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # head tied to the embedding

    def forward_cached(self, idx, pasts=None):
        """The eager KV-cache step: idx [B,T] after the cached tokens; returns logits [B,T,V] and the new pasts."""
        L = 0 if pasts is None else pasts[0][0].shape[2]
        x = self.wte(idx) + self.wpe(torch.arange(L, L + idx.shape[1], device=idx.device))
        new = []
        for i, b in enumerate(self.blocks):
            x, p = b.forward_cached(x, None if pasts is None else pasts[i])
            new.append(p)
        return F.linear(self.ln_f(x), self.wte.weight), new

    def loss(self, idx, targets):
        logits = self.forward(idx)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


def load_cpp_checkpoint(ckpt_dir: str, vocab: int) -> Twin:
    """Builds a Twin from a zerolayer checkpoint directory (config.ini + model-<step>.pt)."""
    ini = configparser.ConfigParser()
    ini.read_string("[top]\n" + open(os.path.join(ckpt_dir, "config.ini")).read())
    m = ini["model"]
    c = TwinConfig(vocab=vocab, layers=int(m["layers"]), heads=int(m["heads"]), dim=int(m["dim"]),
                   context=int(m["context"]), mlp_ratio=int(m["mlp_ratio"]))
    files = glob.glob(os.path.join(ckpt_dir, "model-*.pt"))
    if len(files) != 1:
        raise FileNotFoundError(f"{ckpt_dir}: expected one model-<step>.pt, found {files}")
    archive = torch.jit.load(files[0], map_location="cpu")
    state = {name: p.detach().clone() for name, p in archive.named_parameters()}
    twin = Twin(c)
    missing, unexpected = twin.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise KeyError(f"{files[0]}: parameters differ from the twin: missing {missing}, unexpected {unexpected}")
    return twin.eval()
