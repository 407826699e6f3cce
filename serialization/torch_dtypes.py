"""torch dtypes that the graph format can hold, and their schema codes."""

import torch

from .graph_ir import DType

SCHEMA_DTYPES = {
    torch.float32: DType.float32,
    torch.float16: DType.float16,
    torch.int32: DType.int32,
    torch.int64: DType.int64,
    torch.int8: DType.int8,
    torch.uint8: DType.uint8,
    torch.bool: DType.bool_,
}


def schema_dtype(dtype: torch.dtype) -> DType:
    if dtype not in SCHEMA_DTYPES:
        supported = ", ".join(str(each).replace("torch.", "") for each in SCHEMA_DTYPES)
        raise ValueError(f"dtype {dtype} cannot be serialized (supported: {supported})")
    return SCHEMA_DTYPES[dtype]
