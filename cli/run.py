"""Run a .pte through ExecuTorch's runtime on the Vulkan device and print its outputs.

    vkdelegate run model.pte                          random inputs of the program's shapes
    vkdelegate run model.pte --inputs x.pt --iters 100 --save out.pt
    vkdelegate run model.pte --etdump run.etdp        an ETDump for executorch.devtools.Inspector
"""
import importlib.util


def add_arguments(parser):
    from vkdelegate.cli.timing import add_progress_argument

    parser.add_argument("pte", help="a .pte file")
    parser.add_argument("--inputs", nargs="+", default=["random"], metavar="SPEC",
                        help="'random' (the program's shapes and dtypes), a file.pt (a tensor or a tuple of them), "
                             "or shapes such as 8x64 or 1x16:int64")
    parser.add_argument("--iters", type=int, default=1, help="executes (latency printed when more than one)")
    parser.add_argument("--method", default="forward")
    parser.add_argument("--save", metavar="OUT.pt", help="torch.save the outputs (a tuple) here")
    parser.add_argument("--etdump", metavar="PATH",
                        help="write an ETDump of one run here (vkdelegate.runtime.etdump.run_with_etdump)")
    add_progress_argument(parser)


ETDUMP_MODULE = "vkdelegate.runtime.etdump"


def _etdump_module():
    from vkdelegate.cli.common import CliError

    try:
        found = importlib.util.find_spec(ETDUMP_MODULE) is not None
    except ImportError:
        found = False
    if not found:
        raise CliError(f"--etdump needs {ETDUMP_MODULE}, which this install of vkdelegate does not have", status=2)
    return importlib.import_module(ETDUMP_MODULE)


def _etdump(args, inputs):
    # The agreed call is run_with_etdump(pte_path, inputs, etdump_path); method only when not forward.
    extra = {} if args.method == "forward" else {"method": args.method}
    outputs = _etdump_module().run_with_etdump(args.pte, list(inputs), args.etdump, **extra)
    print(f"ETDump written to {args.etdump} (executorch.devtools.Inspector(etdump_path=...) reads it)")
    return outputs


def run(args) -> int:
    from vkdelegate.cli.common import CliError

    if args.iters < 1:
        raise CliError("--iters must be at least 1")
    if args.etdump:
        _etdump_module()  # before loading anything: a missing module is the first thing to hear
    import torch

    from vkdelegate.cli.common import LoadedProgram, describe, parse_input_specs
    from vkdelegate.cli.timing import latency_line, latency_summary, timed_executes

    given = parse_input_specs(args.inputs)
    program = LoadedProgram(args.pte, args.method)
    inputs = program.inputs(given)
    print(f"inputs: {', '.join(describe(t) for t in inputs)}" + (" (random)" if given is None else ""))
    if args.etdump:
        outputs = _etdump(args, inputs)
    else:
        seconds, outputs = timed_executes(program, inputs, args.iters, args.progress, "run")
        if args.iters > 1:
            print(latency_line(latency_summary(seconds)))
        else:
            print(f"latency: {seconds[0] * 1e3:.3f} ms (one run, the first: it includes the first command buffer's "
                  "recording; --iters for more)")
    for i, out in enumerate(outputs):
        if isinstance(out, torch.Tensor):
            stats = ""
            if out.numel() and (out.dtype.is_floating_point or not out.dtype == torch.bool):
                f = out.double()
                stats = f": min {f.min().item():.4g}, max {f.max().item():.4g}, mean {f.mean().item():.4g}"
                if out.dtype.is_floating_point and not torch.isfinite(out).all():
                    stats += f", {int((~torch.isfinite(out)).sum())} non-finite"
            print(f"output {i}: {describe(out)}{stats}")
        else:
            print(f"output {i}: {out!r}")
    if args.save:
        torch.save(tuple(outputs), args.save)
        print(f"outputs saved to {args.save}")
    return 0
