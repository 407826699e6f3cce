"""Find the first op whose GPU result differs from a CPU reference run of the same graph.

    vkdelegate debug model.pte                       random inputs (seeded; integer inputs 0)
    vkdelegate debug model.pte --inputs x.pt --rtol 1e-3 --atol 1e-4

Each vkdelegate delegate runs on the GPU in debug mode (every tensor its own memory:
VKDELEGATE_DEBUG_VALUES) and on the reference executor, which runs the same blob op by op with
PyTorch (vkdelegate.debug), on the same inputs: the method's, or, for a delegate that takes
values CPU ops compute, random inputs of its own. The first op whose output differs beyond
tolerance is printed: its index in the blob, op, shapes, dtype, max abs and rel error, and the
shaders that ran it. Exit status 0: every output within tolerance; 1: a divergence.
"""


def add_arguments(parser):
    parser.add_argument("pte", help="a .pte file")
    parser.add_argument("--inputs", nargs="+", default=["random"], metavar="SPEC",
                        help="'random' (default), a file.pt (a tensor or a tuple of them), or shapes such as "
                             "8x64 or 1x16:int64")
    parser.add_argument("--rtol", type=float, default=None,
                        help="relative tolerance (default 1e-3 for float32, 1e-2 for float16; exact for integers)")
    parser.add_argument("--atol", type=float, default=None,
                        help="absolute tolerance (default 1e-4 for float32, 1e-2 for float16; exact for integers)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")


def run(args) -> int:
    from vkdelegate.cli.common import CliError, parse_input_specs
    from vkdelegate.debug import debug_pte

    inputs = parse_input_specs(args.inputs)
    try:
        report = debug_pte(args.pte, None if inputs is None else list(inputs), args.rtol, args.atol,
                           seed=args.seed)
    except (OSError, ValueError) as error:  # a missing or corrupt file, an op without a reference
        raise CliError(str(error), status=2) from error
    print(report.format())
    return 1 if report.divergence is not None else 0
