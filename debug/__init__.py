"""The numerical debugger: a CPU reference executor of our serialized graph (reference.py) and
the comparison of a program's GPU run, op by op, against it (debugger.py; `vkdelegate debug`)."""

from .debugger import DebugReport, Divergence, check_delegate, debug_pte
from .reference import GraphReferenceError, ReferenceGraph, run_blob

__all__ = ["DebugReport", "Divergence", "GraphReferenceError", "ReferenceGraph", "check_delegate", "debug_pte",
           "run_blob"]
