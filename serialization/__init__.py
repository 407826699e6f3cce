from .blob import BLOB_VERSION, deserialize_blob, serialize_graph
from .graph_ir import GraphIR
from .pretty import dump
from .pte import DelegateBlob, delegate_blobs

__all__ = ["BLOB_VERSION", "DelegateBlob", "GraphIR", "delegate_blobs", "deserialize_blob", "dump", "serialize_graph"]
