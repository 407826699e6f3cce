from .blob import BLOB_VERSION, deserialize_blob, serialize_graph
from .graph_ir import GraphIR
from .pretty import dump

__all__ = ["BLOB_VERSION", "GraphIR", "deserialize_blob", "dump", "serialize_graph"]
