"""A plain PyTorch-eager twin of zerolayer's baseline transformer.

The slow, obvious reference path: the same architecture as
models/transformer.cpp, written the way nanoGPT writes it, used to check the
C++ model's logits (parity) and to measure the C++ trainer's speed against.
"""
from .model import Twin, TwinConfig, load_cpp_checkpoint

__all__ = ["Twin", "TwinConfig", "load_cpp_checkpoint"]
