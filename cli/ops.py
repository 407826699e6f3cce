"""The operators vkdelegate runs on the GPU (op_registry.py), or one operator's dtypes, limits and notes.

    vkdelegate ops              the table (docs/vulkan-op-support.csv's rows)
    vkdelegate ops --csv        the same as CSV
    vkdelegate ops aten.gelu    one op: dtypes, dynamic shapes, what makes a node stay on CPU
"""
import ast
import difflib
import inspect
import shutil
import sys
import textwrap


def add_arguments(parser):
    parser.add_argument("op", nargs="?", help="an operator: aten.gelu, aten.gelu.default, gelu, et_vk.linear_q4gsw...")
    parser.add_argument("--csv", action="store_true", help="the table as CSV (docs/vulkan-op-support.csv)")


def _matches(query: str):
    from vkdelegate.op_registry import REGISTRY

    q = query.removeprefix("torch.ops.").removeprefix("exir_ops.edge.")
    found = []
    for entry in REGISTRY:
        for name in entry.op_names:
            if name == q or name.startswith(q + ".") or name.split(".", 1)[1] == q or \
                    name.split(".", 1)[1].startswith(q + ".") or (entry.name == q and "." not in q):
                found.append((name, entry))
    return found


def _check_reasons(check) -> list:
    """The reasons a check function gives for leaving a node on CPU: the strings it returns,
    read from its source, so that they are stated in one place (op_registry.py)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(check)))
    except (OSError, TypeError, SyntaxError):
        return []
    reasons = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and node.value is not None:
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                reasons.append(node.value.value)
            elif isinstance(node.value, ast.JoinedStr):
                reasons.append("".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                                       for v in node.value.values))
            elif isinstance(node.value, ast.Call):
                reasons.append(f"whatever {ast.unparse(node.value.func)}() finds")
    return reasons


def show_op(query: str) -> int:
    from vkdelegate.cli.common import CliError
    from vkdelegate.docs.__main__ import dtype_names
    from vkdelegate.op_registry import MAX_RANK, REGISTRY, _accept

    found = _matches(query)
    if not found:
        names = [name for entry in REGISTRY for name in entry.op_names]
        close = difflib.get_close_matches(query, names, n=4, cutoff=0.6)
        hint = f" (close: {', '.join(close)})" if close else ""
        raise CliError(f"{query} is not in the vkdelegate op registry: it stays on ExecuTorch's CPU kernels{hint}")
    registered = None
    try:
        import vkdelegate.runtime as rt

        registered = set(rt.registered_ops())
    except Exception:  # the runtime library is not built: the registry still answers
        pass
    for name, entry in found:
        print(name)
        print(f"  registry entry   {entry.name} (op_registry.py)")
        print(f"  dtypes           {dtype_names(entry)}")
        print(f"  dynamic shapes   {'yes (resizes with its inputs)' if entry.supports_resize else 'no (static shapes only)'}")
        print(f"  ranks            0-{MAX_RANK}")
        for i, line in enumerate(textwrap.wrap(entry.notes, 90) or ["-"]):
            print(f"  {'notes' if i == 0 else '':16s} {line}")
        reasons = [] if entry.check is _accept else _check_reasons(entry.check)
        if reasons:
            print("  stays on CPU when")
            for reason in reasons:
                print(f"    - {reason}")
        traits = [text for flag, text in (
            (entry.keep_undecomposed, "kept whole (ExecuTorch does not decompose it)"),
            (entry.fused, "fused into another op by preprocess (never runs alone)"),
            (entry.aliases_input, "output is a view of its first input"),
            (entry.symint_args, "symbolic int arguments follow resizes"),
            (entry.updates_state, "updates a mutable buffer in place (KV cache) on the GPU"),
            (entry.converts_dtype, "converts dtype"),
        ) if flag]
        for i, t in enumerate(traits):
            print(f"  {'behaviour' if i == 0 else '':16s} {t}")
        if registered is not None and not entry.fused:
            print(f"  runtime kernel   {'yes' if name in registered else 'no: the runtime has no kernel of this name'}")
        print(f"  test tolerance   {entry.kind}")
    return 0


def run(args) -> int:
    from vkdelegate.docs.__main__ import op_support_csv, op_support_rows

    if args.op:
        return show_op(args.op)
    if args.csv:
        sys.stdout.write(op_support_csv())
        return 0
    rows = op_support_rows()
    width = max(len(f"{ns}.{op}") for ns, op, _ in rows)
    notes_width = max(40, shutil.get_terminal_size((120, 20)).columns - width - 3)
    for ns, op, notes in rows:
        lines = textwrap.wrap(notes, notes_width) or [""]
        print(f"{ns + '.' + op:{width}s}  {lines[0]}")
        for line in lines[1:]:
            print(f"{'':{width}s}  {line}")
    print(f"{len(rows)} operators; others stay on ExecuTorch's CPU kernels. `vkdelegate ops NAME` for one.")
    return 0
