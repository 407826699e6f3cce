"""Model definitions in plain torch (no executorch, no hub): importable on any
machine with torch, so the benchmarks can run them under PyTorch CUDA too.

MODELS maps a name to a factory returning (model in eval mode, example inputs).
"""
from .mlp import MLP
from .transformer import TransformerBlock

MODELS = {
    "mlp": lambda: (MLP().eval(), MLP.example_inputs()),
    "transformer_block": lambda: (TransformerBlock().eval(), TransformerBlock.example_inputs()),
}

__all__ = ["MODELS", "MLP", "TransformerBlock"]
