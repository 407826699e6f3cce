"""The vkdelegate blobs inside a .pte file (ExecuTorch's program flatbuffer), for the tools
that start from a file a user has (`vkdelegate info`, the numerical debugger)."""

from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

BACKEND_ID = "VkDelegateBackend"


@dataclass
class DelegateBlob:
    method: str  # the execution plan (method) that calls the delegate
    index: int  # the delegate's position among that method's delegates
    blob: bytes  # what vulkan_preprocess wrote: serialization.deserialize_blob reads it
    # The program's values (EValue ids) the delegate call passes, its inputs then its outputs
    # (None where no instruction calls the delegate), and the method's inputs: which method
    # inputs feed the delegate (the numerical debugger runs a delegate on them).
    call_args: Optional[Tuple[int, ...]] = None
    method_inputs: Tuple[int, ...] = ()


def delegate_blobs(pte: Union[bytes, str]) -> List[DelegateBlob]:
    """Every VkDelegateBackend blob of the program, method by method. `pte` is the file's bytes or path."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    data = pte if isinstance(pte, (bytes, bytearray)) else open(pte, "rb").read()
    try:
        parsed = deserialize_pte_binary(bytes(data))
    except Exception as e:  # a truncated or foreign file: say so, not a flatbuffer traceback
        raise ValueError(f"not a readable ExecuTorch program (.pte): {type(e).__name__}: {e}") from e
    program = getattr(parsed, "program", parsed)
    blobs = []
    for plan in program.execution_plan:
        calls = {instruction.instr_args.delegate_index: tuple(instruction.instr_args.args)
                 for chain in plan.chains for instruction in chain.instructions
                 if hasattr(instruction.instr_args, "delegate_index")}
        for i, delegate in enumerate(plan.delegates):
            if delegate.id != BACKEND_ID:
                continue
            ref = delegate.processed
            if ref.location.name != "INLINE":
                raise ValueError(f"{plan.name}: delegate {i} is stored outside the program ({ref.location.name})")
            blobs.append(DelegateBlob(plan.name, i, bytes(program.backend_delegate_data[ref.index].data),
                                      calls.get(i), tuple(plan.inputs)))
    return blobs
