"""Export and lower a model factory to a .pte; print its partitions and what stayed on CPU and why.

    vkdelegate export vkdelegate.examples.models:MODELS.mlp -o mlp.pte
    vkdelegate export my_models:make_net -o net.pte --inputs 1x3x224x224 --fp16
    vkdelegate export vkdelegate.examples.models:TransformerBlock -o tb.pte --dynamic 0.1=1..128

MODULE:FACTORY names a torch.nn.Module class or instance, or a function returning a module or a
(module, example inputs) pair; a step into a dict takes its key (MODELS.mlp). Without --inputs the
factory's inputs are used, else the module's example_inputs().
"""
import collections
import logging
import re
import time


def add_arguments(parser):
    parser.add_argument("factory", metavar="MODULE:FACTORY")
    parser.add_argument("-o", "--output", required=True, help="the .pte to write")
    parser.add_argument("--fp16", action="store_true", help="weights and math in fp16 (VulkanPartitioner force_fp16)")
    parser.add_argument("--dynamic", nargs="+", default=[], metavar="IN.DIM=MIN..MAX",
                        help="a dynamic dimension: input IN's dimension DIM from MIN to MAX (0.1=1..128); "
                             "only ops that can resize are then delegated")
    parser.add_argument("--inputs", nargs="+", default=[], metavar="SPEC",
                        help="example inputs: a file.pt, or shapes such as 8x64 or 1x16:int64")


_DYNAMIC = re.compile(r"^(\d+)\.(\d+)=(\d*)\.\.(\d+)$")


def dynamic_shapes(specs, inputs):
    import torch

    if not specs:
        return None
    shapes = [{} for _ in inputs]
    from vkdelegate.cli.common import CliError

    for spec in specs:
        m = _DYNAMIC.match(spec)
        if not m:
            raise CliError(f"--dynamic '{spec}': expected IN.DIM=MIN..MAX, e.g. 0.1=1..128")
        index, dim, low, high = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1), int(m.group(4))
        if index >= len(inputs) or dim >= inputs[index].dim():
            raise CliError(f"--dynamic '{spec}': the model has {len(inputs)} input(s)"
                           + (f"; input {index} has {inputs[index].dim()} dimensions" if index < len(inputs) else ""))
        if not low <= inputs[index].shape[dim] <= high:
            raise CliError(f"--dynamic '{spec}': the example input's size {inputs[index].shape[dim]} is outside {low}..{high}")
        shapes[index][dim] = torch.export.Dim(f"in{index}_dim{dim}", min=low, max=high)
    return tuple(shapes)


class _Collect(logging.Handler):
    """The partitioner's log records: its rejection reasons and its summary."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.records = []

    def emit(self, record):
        self.records.append(record)


# The partitioner's message for a node it leaves on CPU (partitioner/vulkan_partitioner.py).
_NOT_DELEGATED = "vkdelegate: not delegated: %s (%s): %s"


def _op_name(target) -> str:
    from vkdelegate.fx_nodes import op_name

    return op_name(target)


def summarize(edge, records):
    """(partitions as [(ops Counter)], cpu ops as [(op, reason, count)], other notes)."""
    from executorch.exir.lowered_backend_module import LoweredBackendModule

    gm = edge.exported_program().graph_module
    partitions = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "__name__", "") == "executorch_call_delegate":
            module = getattr(gm, node.args[0].target)
            assert isinstance(module, LoweredBackendModule)
            ops = collections.Counter(_op_name(n.target) for n in module.original_module.graph.nodes
                                      if n.op == "call_function")
            partitions.append((module.backend_id, ops))
    reasons = {r.args[0]: r.args[2] for r in records if r.msg == _NOT_DELEGATED and isinstance(r.args, tuple)}
    cpu = collections.Counter()
    for node in gm.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "__name__", "") not in (
                "executorch_call_delegate", "getitem"):
            reason = reasons.get(node.name, "the partitioner did not see it (ExecuTorch added it after partitioning)")
            cpu[(_op_name(node.target), reason)] += 1
    notes = [r.getMessage() for r in records if "computes only constants" in str(r.msg)]
    return partitions, cpu, notes


def run(args) -> int:
    import os

    import torch

    from vkdelegate.cli.common import CliError, describe, load_factory, parse_input_specs

    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        raise CliError(f"-o {args.output}: no such directory {out_dir}")
    # The factory and the inputs first: a mistake there is reported before the compiler is imported.
    model, inputs = load_factory(args.factory)
    given = parse_input_specs(args.inputs)
    if given is not None:
        inputs = given
    if inputs is None:
        raise CliError(f"{args.factory} gives no example inputs and has no example_inputs(): pass --inputs, e.g. 8x64")
    options = {"force_fp16": args.fp16}
    shapes = dynamic_shapes(args.dynamic, inputs)

    from vkdelegate.partitioner import VulkanPartitioner  # before executorch: quiets torchao

    from executorch.exir import to_edge_transform_and_lower
    if shapes is not None:
        options["require_dynamic_shapes"] = True

    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            exported = torch.export.export(model, tuple(inputs), dynamic_shapes=shapes)
    except Exception as e:
        first = (str(e).strip().splitlines() or [""])[0]
        raise CliError(f"torch.export failed on inputs {', '.join(describe(t) for t in inputs)}: "
                       f"{type(e).__name__}: {first}") from e
    logger = logging.getLogger("vkdelegate")
    collect, old_level = _Collect(), logger.level
    logger.addHandler(collect)
    logger.setLevel(logging.INFO)
    try:
        edge = to_edge_transform_and_lower(exported, partitioner=[VulkanPartitioner(options)])
    finally:
        logger.removeHandler(collect)
        logger.setLevel(old_level)
    # Before to_executorch, which adds memory-planning nodes (alloc) to the same graph.
    partitions, cpu, notes = summarize(edge, collect.records)
    program = edge.to_executorch()
    with open(args.output, "wb") as f:
        program.write_to_file(f)
    seconds = time.perf_counter() - t0

    if args.verbose:
        for r in collect.records:
            print(f"[log] {r.getMessage()}")
    size = os.path.getsize(args.output)
    print(f"wrote {args.output} ({size / 1024:.1f} KiB) in {seconds:.1f} s; inputs "
          f"{', '.join(describe(t) for t in inputs)}" + (" (dynamic: " + ", ".join(args.dynamic) + ")" if args.dynamic else "")
          + (", fp16" if args.fp16 else ""))
    ours = [p for p in partitions if p[0] == "VkDelegateBackend"]
    print(f"{len(ours)} Vulkan partition(s)")
    for i, (backend, ops) in enumerate(partitions):
        listing = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in sorted(ops.items()))
        print(f"  partition {i} ({backend}, {sum(ops.values())} ops): {listing}")
    if cpu:
        print(f"on CPU ({sum(cpu.values())} ops):")
        for (op, reason), n in sorted(cpu.items()):
            print(f"  {op}{f' x{n}' if n > 1 else ''}: {reason}")
    else:
        print("on CPU: nothing (the whole program runs on the GPU)")
    for note in notes:
        print(f"note: {note.removeprefix('vkdelegate: ')}")
    return 0
