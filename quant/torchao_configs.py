"""torchao configurations of the quantized flows that vkdelegate fuses into its et_vk ops
(quant/torchao_ops.py), and applying them to a model for export.

Importing this module does not import torchao; calling its functions does.
"""
from typing import Optional

import torch


def _torchao():
    import torchao.quantization as tq
    from torchao.quantization.granularity import PerAxis, PerGroup
    from torchao.utils import unwrap_tensor_subclass
    return tq, PerAxis, PerGroup, unwrap_tensor_subclass


def granularity(group_size: Optional[int]):
    """PerGroup(group_size), or PerAxis(0) for None."""
    _, PerAxis, PerGroup, _ = _torchao()
    return PerAxis(0) if group_size is None else PerGroup(group_size)


def weight_only_config(bits: int, group_size: Optional[int], asymmetric: bool = False):
    tq, _, _, _ = _torchao()
    mapping = tq.MappingType.ASYMMETRIC if asymmetric else tq.MappingType.SYMMETRIC
    return tq.IntxWeightOnlyConfig(weight_dtype=getattr(torch, f"int{bits}"), granularity=granularity(group_size),
                                   mapping_type=mapping)


def dynamic_activation_config(bits: int, group_size: Optional[int], asymmetric: bool = False):
    tq, _, _, _ = _torchao()
    mapping = tq.MappingType.ASYMMETRIC if asymmetric else tq.MappingType.SYMMETRIC
    return tq.Int8DynamicActivationIntxWeightConfig(weight_dtype=getattr(torch, f"int{bits}"),
                                                    weight_granularity=granularity(group_size),
                                                    weight_mapping_type=mapping)


def quantized(module: torch.nn.Module, config, embedding: bool = False) -> torch.nn.Module:
    """module with torchao's quantize_(config) applied (to its Linear or, with embedding, its
    Embedding layers) and tensor subclasses unwrapped for export."""
    tq, _, _, unwrap = _torchao()
    kind = torch.nn.Embedding if embedding else torch.nn.Linear
    tq.quantize_(module, config, filter_fn=lambda mod, fqn: isinstance(mod, kind))
    return unwrap(module).eval()
