"""The Python twin loads the C++ weights and gives the same logits (within 1e-4)."""
import glob
import os

import numpy as np
import torch

from conftest import ROOT
from zerolayer_twin import load_cpp_checkpoint


def read_logits(path):
    raw = open(path, "rb").read()
    t, v = np.frombuffer(raw[:16], dtype=np.int64)
    return np.frombuffer(raw[16:], dtype=np.float32).reshape(t, v)


def test_twin_matches_cpp_logits(zl, tmpdir_zl):
    out = os.path.join(tmpdir_zl, "parity")
    zl("train", "ablations/smoke.ini", "--output.dir", out, "--data.tokenizer", "byte", "--model.context", "256",
       "--decode.max_new_tokens", "8", "--train.steps", "20", "--seed", "3")
    ckpt = glob.glob(os.path.join(out, "checkpoints", "*"))[0]
    prompt = "The Seller shall deliver 40 units to the Buyer by 2024-03-12."
    logits_file = os.path.join(tmpdir_zl, "logits.bin")
    zl("generate", ckpt, "--prompt", prompt, "--max-new-tokens", "1", "--logits-out", logits_file)
    cpp = read_logits(logits_file)

    twin = load_cpp_checkpoint(ckpt, vocab=257)
    ids = torch.tensor([list(prompt.encode())], dtype=torch.long)  # byte tokenizer: ids are the bytes
    with torch.no_grad():
        py = twin(ids)[0].numpy()
    assert py.shape == cpp.shape
    assert np.abs(py - cpp).max() < 1e-4, np.abs(py - cpp).max()
    # The weights are trained, not the initial ones: the logits are far from uniform.
    assert cpp.std() > 0.5
