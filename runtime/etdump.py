"""Run a .pte with ExecuTorch's ETDump generator, for ExecuTorch's Inspector.

``run_with_etdump("model.pte", [x], "model.etdp")`` runs the program once through the
executorch wheel's own runtime with an event tracer and writes the ETDump. Besides
ExecuTorch's own events (the CPU ops, each DELEGATE_CALL), each vkdelegate partition
logs one event per GPU dispatch with its GPU timestamp duration, named
"<op> (node <i>) <shader>". Open it with
``executorch.devtools.Inspector(etdump_path="model.etdp", etrecord=...)``; with the
ETRecord of the export (``to_edge_transform_and_lower(..., generate_etrecord=True)``,
then ``get_etrecord()`` of ``to_executorch()``'s result) the Inspector maps each
dispatch to the ATen nodes it computes. docs/etdump.md shows the whole path.
"""
import os
from typing import Any, List, Optional, Sequence

# Room for the tensors ExecuTorch logs into the ETDump's debug buffer when asked
# (debug_buffer_path); profiling events do not use it.
DEBUG_BUFFER_BYTES = 64 << 20


def run_with_etdump(
    pte_path: str,
    inputs: Sequence[Any],
    etdump_path: str,
    debug_buffer_path: Optional[str] = None,
    method: str = "forward",
) -> List[Any]:
    """Runs `method` of the program at `pte_path` once on `inputs`, writes its ETDump to
    `etdump_path` (and ExecuTorch's debug buffer to `debug_buffer_path`, where given),
    and returns the method's outputs."""
    if not os.path.isfile(pte_path):
        raise FileNotFoundError(f"no program at {pte_path}")
    # Imported here: executorch.runtime imports the exir compiler (seconds). The backend is
    # registered already: importing this module imported vkdelegate.runtime.
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(
        pte_path,
        enable_etdump=True,
        debug_buffer_size=DEBUG_BUFFER_BYTES if debug_buffer_path else 0,
    )
    try:
        loaded = program.load_method(method)
    except KeyError:
        raise ValueError(f"{pte_path} has no method {method!r}") from None
    outputs = loaded.execute(list(inputs))
    # Copies: the outputs stay valid once the program is gone.
    outputs = [item.clone() if hasattr(item, "clone") else item for item in outputs]
    program.write_etdump_result_to_file(etdump_path, debug_buffer_path)
    return outputs
