"""`vkdelegate COMMAND ...`: one module per command, named in COMMANDS.

Each module defines add_arguments(parser) and run(args) -> exit status. Modules keep their
heavy imports (torch.export, executorch's runtime) inside run(), so `vkdelegate ops` does not
pay for what `vkdelegate export` needs. A command whose module cannot be imported (the
debugger, where it is not installed) still shows in --help and says so when called (exit 2).
"""
import argparse
import importlib
import os
import sys
import traceback
from typing import List, Optional

from vkdelegate.cli.common import CliError

COMMANDS = {
    "devices": "vkdelegate.cli.devices",
    "ops": "vkdelegate.cli.ops",
    "export": "vkdelegate.cli.export",
    "info": "vkdelegate.cli.info",
    "run": "vkdelegate.cli.run",
    "bench": "vkdelegate.cli.bench",
    "debug": "vkdelegate.cli.debug",
}


def _load(module_name: str):
    """The command's module, or the reason it cannot be had."""
    try:
        return importlib.import_module(module_name), None
    except ModuleNotFoundError as e:
        if e.name is not None and module_name.startswith(e.name):
            return None, f"{module_name} is not installed"
        return None, f"{module_name} cannot be imported: {e}"
    except Exception as e:  # a broken module must not take the other commands down
        return None, f"{module_name} cannot be imported: {type(e).__name__}: {e}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vkdelegate", description="Run PyTorch models on GPUs through Vulkan: tools for ExecuTorch .pte files.")
    parser.add_argument("--verbose", "-v", action="store_true", help="full tracebacks and the partitioner's log")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module, missing = _load(module_name)
        doc = (module.__doc__ or "").strip().splitlines()[0] if module is not None and module.__doc__ else ""
        p = sub.add_parser(name, help=doc if module is not None else f"(unavailable: {missing})",
                           description=(module.__doc__ if module is not None else missing),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS,
                       help="full tracebacks and the partitioner's log")
        if module is None:
            p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            p.set_defaults(_run=None, _missing=missing)
        else:
            module.add_arguments(p)
            p.set_defaults(_run=module.run, _missing=None)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args._run is None:
        print(f"vkdelegate {args.command}: {args._missing}", file=sys.stderr)
        return 2
    try:
        return int(args._run(args) or 0)
    except CliError as e:
        if args.verbose:
            traceback.print_exc()
        print(f"vkdelegate {args.command}: error: {e}", file=sys.stderr)
        return e.status
    except BrokenPipeError:  # `vkdelegate ops | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print(f"vkdelegate {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # one line, not a traceback dump: --verbose shows it
        if args.verbose:
            traceback.print_exc()
        first = (str(e).strip().splitlines() or [""])[0]
        hint = "" if args.verbose else " (--verbose for the traceback)"
        print(f"vkdelegate {args.command}: error: {type(e).__name__}: {first}{hint}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
