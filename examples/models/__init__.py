"""Model definitions in plain torch (no executorch, no hub): importable on any
machine with torch, so the benchmarks can run them under PyTorch CUDA too.

MODELS maps a name to a factory returning (model in eval mode, example inputs).
"""
from .cnn import UNet, MobileNetV2, ResNet, resnet18, resnet50
from .llama import Llama
from .mlp import MLP
from .transformer import TransformerBlock
from .vit import ViTTiny

MODELS = {
    "mlp": lambda: (MLP().eval(), MLP.example_inputs()),
    "transformer_block": lambda: (TransformerBlock().eval(), TransformerBlock.example_inputs()),
    "mobilenet_v2": lambda: (MobileNetV2().eval(), MobileNetV2.example_inputs()),
    "resnet18": lambda: (resnet18().eval(), ResNet.example_inputs()),
    "resnet50": lambda: (resnet50().eval(), ResNet.example_inputs()),
    "unet": lambda: (UNet().eval(), UNet.example_inputs()),
    "vit_tiny": lambda: (ViTTiny().eval(), ViTTiny.example_inputs()),
    "llama": lambda: (Llama().eval(), Llama.example_inputs()),
}

__all__ = ["MODELS", "Llama", "MLP", "MobileNetV2", "ResNet", "TransformerBlock", "UNet", "ViTTiny", "resnet18",
           "resnet50"]
