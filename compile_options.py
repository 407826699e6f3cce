"""Options of VulkanPartitioner, and their round trip through ExecuTorch compile specs.

The partitioner validates them and hands them to preprocess as
CompileSpec(key, JSON bytes); preprocess reads them back with from_compile_specs.
"""

import json
from typing import Any, Dict, List, Mapping, Optional

from executorch.exir.backend.compile_spec_schema import CompileSpec

DEFAULTS: Dict[str, Any] = {
    # Run fp32 partitions in fp16 on the GPU (half weights and math; inputs and outputs
    # stay float32 at the boundary). The device needs 16-bit storage and shaderFloat16.
    "force_fp16": False,
    # Delegate only ops whose runtime implementation can resize (dynamic shapes).
    "require_dynamic_shapes": False,
    # Q4_0 / Q8_0 GGUF weights repacked at export into the weight-only int4 / int8 layout (the same
    # numbers; backends/gguf_repack.py), for its decode fusions and tensor-core prefill. False keeps
    # the GGUF block kernels.
    "gguf_repack": True,
    # An attention layer's rope, cache writes and attention over the cache as one op
    # (et_vk.vkd_sdpa_rope_kv: at decode the rope and the writes run inside the attention's kernel).
    # False keeps the rope and the writes a dispatch of their own (et_vk.vkd_rope_kv_update), to compare.
    "fuse_rope_attention": True,
}


def validate(options: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """Returns every option, defaults filled in; raises on unknown keys and unusable values."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown vkdelegate compile option(s) {unknown}; known: {sorted(DEFAULTS)}")
    for key, value in options.items():
        if not isinstance(value, type(DEFAULTS[key])):
            raise ValueError(f"compile option {key!r} must be {type(DEFAULTS[key]).__name__}, got {value!r}")
    return {**DEFAULTS, **options}


def to_compile_specs(options: Mapping[str, Any]) -> List[CompileSpec]:
    return [CompileSpec(key, json.dumps(options[key]).encode()) for key in sorted(options)]


def from_compile_specs(compile_specs: List[CompileSpec]) -> Dict[str, Any]:
    return validate({spec.key: json.loads(spec.value.decode()) for spec in compile_specs})
