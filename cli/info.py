"""What a .pte holds: delegates, their ops, constants, memory plan, and the shaders run here.

Each delegate's memory plan and the shader each dispatch will run are those of this device.

    vkdelegate info model.pte
    vkdelegate info model.pte --dump      also the whole graph of each delegate
"""
import collections


def add_arguments(parser):
    parser.add_argument("pte", help="a .pte file")
    parser.add_argument("--dump", action="store_true", help="print each delegate's graph (values and ops)")


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n < (1 << 20) else f"{n / (1 << 20):.2f} MiB"


def _tensor(value) -> str:
    return f"{value.dtype.name}{list(value.sizes)}"


def program_summary(data: bytes):
    """[(method, [delegate ids], Counter of CPU kernel calls)] from the program flatbuffer."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    parsed = deserialize_pte_binary(data)
    program = getattr(parsed, "program", parsed)
    methods = []
    for plan in program.execution_plan:
        kernels = collections.Counter()
        for chain in plan.chains:
            for instruction in chain.instructions:
                if type(instruction.instr_args).__name__ == "KernelCall":
                    op = plan.operators[instruction.instr_args.op_index]
                    kernels[f"{op.name}.{op.overload}" if op.overload else op.name] += 1
        methods.append((plan.name, [d.id for d in plan.delegates], kernels))
    return methods


def run(args) -> int:
    import vkdelegate.runtime as rt
    from vkdelegate.cli.common import CliError, read_pte
    from vkdelegate.serialization import deserialize_blob, dump

    data, blobs = read_pte(args.pte)
    print(f"{args.pte}: {_kib(len(data))}")
    for method, delegates, kernels in program_summary(data):
        ids = collections.Counter(delegates)
        print(f"method {method}: {len(delegates)} delegate call(s) ("
              + (", ".join(f"{n} {name}" for name, n in ids.items()) or "none") + f"), {sum(kernels.values())} CPU kernel call(s)")
        for name, n in sorted(kernels.items()):
            print(f"  on CPU: {name}{f' x{n}' if n > 1 else ''}")
    if not blobs:
        print("no VkDelegateBackend delegate: nothing of this program runs on the GPU through vkdelegate")
        return 0
    device = rt.device_info()["name"] if rt.is_available() else None
    for b in blobs:
        try:
            graph = deserialize_blob(b.blob)
        except Exception as e:
            raise CliError(f"{args.pte}: delegate {b.index} of {b.method}: {e}") from e
        ops = collections.Counter(call.name for call in graph.chain)
        constant_bytes = sum(len(c) for c in graph.constants)
        print(f"\ndelegate {b.index} of {b.method}: blob {_kib(len(b.blob))}, {len(graph.chain)} ops, "
              f"{len(graph.constants)} constants ({_kib(constant_bytes)})")
        print("  inputs:  " + ", ".join(_tensor(graph.values[i]) for i in graph.input_ids))
        print("  outputs: " + ", ".join(_tensor(graph.values[i]) for i in graph.output_ids))
        if graph.options:
            print(f"  options: {', '.join(graph.options)}")
        print("  ops: " + ", ".join(f"{name} x{n}" if n > 1 else name for name, n in sorted(ops.items())))
        if args.dump:
            print("  " + dump(b.blob).replace("\n", "\n  "))
        if device is None:
            print(f"  (no Vulkan device: {rt.unavailable_reason()}; no memory plan or shaders)")
            continue
        try:
            loaded = rt.Graph(b.blob)
        except Exception as e:
            raise CliError(f"{args.pte}: delegate {b.index} of {b.method} does not load on {device}: {e}") from e
        m = loaded.memory_report()
        print(f"  memory plan on {device}: constants {_kib(m['constant_bytes'])}, intermediates "
              f"{_kib(m['intermediate_bytes'])} in {m['num_shared_objects']} shared objects "
              f"({_kib(m['planned_bytes'])} planned, {_kib(m['unshared_bytes'])} without sharing), "
              f"state {_kib(m['state_bytes'])}, staging {_kib(m['staging_bytes'])}, parameters {_kib(m['params_bytes'])}")
        dispatches = loaded.dispatches()
        print(f"  {len(dispatches)} dispatches:")
        width = max((len(op) for op, _ in dispatches), default=0)
        for i, (op, shader) in enumerate(dispatches):
            print(f"    {i:3d}  {op:{width}s}  {shader}")
    return 0
