"""Every op registry sample on the eager vulkan device against eager CPU PyTorch.

    python3 benchmarks/eager_samples.py [--entries add mm ...] [--json FILE] [--validation]

Runs each case of tests/op_samples.py's SAMPLES (every registry entry, every case, all sizes
but the truly enormous) on a deep copy of its module on the CPU (the reference: stateful
samples, the KV-cache ops, write their buffers, as in tests/op_batches.py output_count) and
on two more deep copies moved to the `vulkan` device, one after the other: the first call
builds the one-op graphs (Python), the second runs them from the C++ kernels' cache. Outputs, and the buffers the sample may have
written, must match with tests/test_eager.py's tolerances (the delegate's, tests/helpers.py).
For each entry it reports the cases that matched, mismatched (max abs / rel error), ran an op on
the CPU (the Python fallback of vkdelegate/eager/dispatch.py, with its reason, or the C++
fallback for ops with no device kernel), raised, or were skipped, whether the entry's own op
ran on the GPU, and the wall time. Exits 1 if a case mismatched or raised.

This is slow (a graph build per new call, lavapipe computing on the CPU): it lives here, not in
the test suite, which runs a sample of it (tests/test_eager.py).
"""

import argparse
import copy
import json
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")

# Registry entries whose own op an eager program cannot reach, and why. Their samples still run
# (they must match the CPU); an op they reach that falls back is reported, not counted as a failure.
NOT_EAGER_REACHABLE = {
    # Made by export-time fusion passes (backends/*.py): eager code calls the pieces.
    "dequantize_per_channel": "fused by the PT2E q8 pass (backends/) into vkd_q8ta_* ops; eagerly the "
                              "quantized_decomposed ops run as they are, on the CPU",
    "torchao_dequantize_affine": "fused into vkd_linear_qw / vkd_embedding_qw by backends/torchao_fusion.py; "
                                 "eagerly torchao's ops run on the CPU",
    "torchao_quantize_affine": "fused into vkd_linear_dq8a_qw by backends/torchao_fusion.py",
    "torchao_choose_qparams_affine": "fused into vkd_linear_dq8a_qw by backends/torchao_fusion.py",
    "torchao_dequantize_gguf": "fused into vkd_linear_gguf / vkd_embedding_gguf by the GGUF fusion pass",
}

# Entries whose samples run eagerly on the device but never through the entry's own op, by
# design: eager PyTorch reaches them as other ops.
RUN_AS_OTHER_OPS = {
    **{name: "a view eagerly: metadata over the same storage (csrc/), no kernel" for name in (
        "view_copy", "permute_copy", "unsqueeze_copy", "select_copy", "slice_copy", "expand_copy",
        "split_with_sizes_copy", "unfold_copy")},
    "clone": "a device copy (csrc/ clone), or the GPU gather of a strided view (an index_select)",
    "to_copy": "copy_ (csrc/): a device-to-device copy, or a conversion through the host",
    "scalar_tensor": "a factory: the device's empty + fill_ (csrc/)",
}

ENORMOUS_ELEMENTS = 1 << 26  # a case with an operand this large is skipped (none is today)


def _parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", nargs="+", help="registry entry names (default: all)")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--validation", action="store_true",
                        help="Khronos validation layer on (as the tests run); slower")
    parser.add_argument("--verbose", action="store_true", help="a line per case")
    return parser.parse_args()


ARGS = _parse()
if ARGS.validation:
    os.environ["VKDELEGATE_VALIDATION"] = "1"
sys.path.insert(0, TESTS)

import torch  # noqa: E402
from torch.utils._pytree import tree_flatten, tree_map  # noqa: E402

import vkdelegate.eager as eager  # noqa: E402
import vkdelegate.runtime as rt  # noqa: E402
from op_samples import SAMPLES  # noqa: E402
from test_eager import _tolerance  # noqa: E402  (the tolerances of test_eager, tests/helpers.py's table)
from vkdelegate.eager import _C, dispatch  # noqa: E402
from vkdelegate.fx_nodes import op_name  # noqa: E402
from vkdelegate.op_registry import REGISTRY  # noqa: E402

DEV = "vulkan"

# ---- what ran where: the Python fallback (dispatch._cpu_fallback) and the ops that reached a
# one-op graph (dispatch._run without falling back), recorded per case.
_python_fallbacks = []  # (op name, reason)
_gpu_ops = set()
_original_fallback, _original_run = dispatch._cpu_fallback, dispatch._run


def _recording_fallback(op, name, args, kwargs, reason):
    _python_fallbacks.append((name, reason))
    return _original_fallback(op, name, args, kwargs, reason)


def _recording_run(op, edge_target, name, args, kwargs):
    before = len(_python_fallbacks)
    out = _original_run(op, edge_target, name, args, kwargs)
    if not any(item[0] == name for item in _python_fallbacks[before:]):
        _gpu_ops.add(name)
    return out


dispatch._cpu_fallback, dispatch._run = _recording_fallback, _recording_run


def _largest(case) -> int:
    tensors = [item for item in tree_flatten(case.inputs)[0] if isinstance(item, torch.Tensor)]
    tensors += list(case.module.state_dict().values())
    return max((item.numel() for item in tensors), default=0)


def _errors(want: torch.Tensor, have: torch.Tensor):
    """(max abs error, max rel error) over the finite elements, as floats."""
    if want.shape != have.shape:
        return None, None
    w, h = want.double(), have.double()
    both = torch.isfinite(w) & torch.isfinite(h)
    if not both.any():
        return 0.0, 0.0
    diff = (w - h).abs()[both]
    rel = diff / w.abs()[both].clamp_min(1e-30)
    return float(diff.max()), float(rel.max())


def _compare(what, want, have, tolerance):
    """None if they match, else a description with the max abs / rel error."""
    if isinstance(want, torch.Tensor):
        if not isinstance(have, torch.Tensor):
            return f"{what}: got {type(have).__name__}, expected a tensor"
        if have.device.type != DEV:
            return f"{what}: on {have.device}, not on the vulkan device"
        have = have.cpu()
        try:
            torch.testing.assert_close(have, want, **tolerance, equal_nan=True)
            return None
        except AssertionError as error:
            abs_err, rel_err = _errors(want, have)
            first = str(error).strip().splitlines()[0]
            if abs_err is None or have.dtype != want.dtype:
                return f"{what}: {first}"
            return f"{what}: max abs {abs_err:.3g} rel {rel_err:.3g} ({first})"
    return None if want == have else f"{what}: {have!r} != {want!r}"


def _run_case(entry, case) -> dict:
    result = {"case": case.case_id, "status": "match", "fallbacks": [], "time_s": 0.0}
    largest = _largest(case)
    if largest > ENORMOUS_ELEMENTS:
        result.update(status="skipped", detail=f"an operand of {largest} elements (> {ENORMOUS_ELEMENTS})")
        return result
    start = time.perf_counter()
    del _python_fallbacks[:]
    _gpu_ops.clear()
    native_before = dict(_C.fallback_counts())
    validation_before = rt.validation_error_count()
    try:
        reference = copy.deepcopy(case.module).eval()
        with torch.no_grad():
            expected = reference(*copy.deepcopy(case.inputs))
        dtype = next((item.dtype for item in case.inputs if isinstance(item, torch.Tensor)),
                     tree_flatten(expected)[0][0].dtype)
        tolerance = _tolerance(entry, dtype)
        problems = []
        # Twice: the first call builds the one-op graphs (Python), the second runs them from the C++
        # kernels' cache.
        for call in ("", "cached call: "):
            with torch.no_grad():
                module = copy.deepcopy(case.module).eval().to(DEV)
                inputs = tree_map(lambda item: item.to(DEV) if isinstance(item, torch.Tensor) else item, case.inputs)
                # Factories in a sample's forward (torch.full, torch.arange with no device) make their
                # tensors on the device, as a device-generic model would.
                with torch.device(DEV):
                    got = module(*inputs)
            wants, haves = tree_flatten(expected)[0], tree_flatten(got)[0]
            if len(wants) != len(haves):
                problems.append(f"{call}{len(haves)} outputs, expected {len(wants)}")
            problems += [call + p for i, (w, h) in enumerate(zip(wants, haves))
                         if (p := _compare(f"output {i}", w, h, tolerance))]
            # Buffers the sample writes (a KV cache), and the rest, which must be as they were.
            device_buffers = dict(module.named_buffers())
            for name, want in reference.named_buffers():
                problem = _compare(f"buffer {name}", want, device_buffers.get(name), tolerance)
                if problem:
                    problems.append(call + problem)
        torch.vulkan.synchronize()
        if problems:
            result.update(status="mismatch", detail="; ".join(problems))
    except Exception as error:  # noqa: BLE001 (a sweep reports every error and goes on)
        first = (str(error).strip().splitlines() or [""])[0]
        result.update(status="error", detail=f"{type(error).__name__}: {first[:300]}")
        try:
            torch.vulkan.synchronize()
        except Exception:  # noqa: BLE001 (the error above is the one reported)
            pass
    result["time_s"] = time.perf_counter() - start
    fallbacks = {f"{name} ({reason})" for name, reason in _python_fallbacks}
    fallbacks |= {f"{name} (no device kernel)" for name, count in _C.fallback_counts().items()
                  if count > native_before.get(name, 0)}
    result["fallbacks"] = sorted(fallbacks)
    result["gpu_ops"] = sorted(_gpu_ops)
    validation = rt.validation_error_count() - validation_before
    if validation:
        result["validation_errors"] = validation
        if result["status"] == "match":
            result.update(status="error", detail=f"{validation} Vulkan validation error(s)")
    return result


def _entry_ops(entry):
    names = set()
    for target in entry.targets:
        op = getattr(target, "_op", None)
        if isinstance(op, torch._ops.OpOverload):
            names.add(op_name(op))
    return names


def _run_entry(entry) -> dict:
    start = time.perf_counter()
    eager.clear_cache()
    cases = [_run_case(entry, case) for case in SAMPLES[entry.name]()]
    own = _entry_ops(entry)
    ran = set().union(*(set(case["gpu_ops"]) for case in cases)) if cases else set()
    counts = {status: sum(case["status"] == status for case in cases)
              for status in ("match", "mismatch", "error", "skipped")}
    return {
        "entry": entry.name,
        "cases": len(cases),
        **counts,
        "fell_back": sum(bool(case["fallbacks"]) for case in cases),
        "own_op_on_gpu": bool(own & ran),
        "not_eager_reachable": NOT_EAGER_REACHABLE.get(entry.name),
        "run_as_other_ops": RUN_AS_OTHER_OPS.get(entry.name),
        "time_s": time.perf_counter() - start,
        "case_results": cases,
    }


def _print_table(results):
    header = f"{'entry':32} {'cases':>5} {'match':>5} {'mism':>5} {'error':>5} {'fellb':>5} {'skip':>4} {'gpu':>4} {'time':>7}"
    print(header)
    print("-" * len(header))
    for r in results:
        note = " not eager-reachable" if r["not_eager_reachable"] else ""
        print(f"{r['entry']:32} {r['cases']:5} {r['match']:5} {r['mismatch']:5} {r['error']:5} {r['fell_back']:5} "
              f"{r['skipped']:4} {'yes' if r['own_op_on_gpu'] else 'no':>4} {r['time_s']:6.1f}s{note}")


def _print_details(results):
    for r in results:
        lines = []
        if r["not_eager_reachable"]:
            lines.append(f"  not eager-reachable: {r['not_eager_reachable']}")
        if r["run_as_other_ops"] and not r["own_op_on_gpu"]:
            lines.append(f"  own op not used eagerly: {r['run_as_other_ops']}")
        elif not r["own_op_on_gpu"] and not r["not_eager_reachable"]:
            lines.append("  own op never ran on the GPU")
        for case in r["case_results"]:
            if case["status"] in ("mismatch", "error", "skipped"):
                lines.append(f"  {case['status']} {case['case']}: {case['detail']}")
        fallbacks = {}
        for case in r["case_results"]:
            for item in case["fallbacks"]:
                fallbacks.setdefault(item, []).append(case["case"])
        for item, cases in sorted(fallbacks.items()):
            lines.append(f"  fell back in {len(cases)} case(s) (e.g. {cases[0]}): {item}")
        if lines:
            print(r["entry"])
            print("\n".join(lines))


def main() -> int:
    entries = list(REGISTRY)
    if ARGS.entries:
        unknown = set(ARGS.entries) - {entry.name for entry in entries}
        if unknown:
            print(f"unknown entries: {sorted(unknown)}", file=sys.stderr)
            return 2
        entries = [entry for entry in entries if entry.name in ARGS.entries]
    start = time.perf_counter()
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback's one-per-op warnings: recorded per case instead
        for entry in entries:
            result = _run_entry(entry)
            results.append(result)
            if ARGS.verbose:
                for case in result["case_results"]:
                    print(f"  {entry.name} {case['case']}: {case['status']} {case['time_s']:.2f}s "
                          f"{case.get('detail', '')} {case['fallbacks'] or ''}", flush=True)
            print(f"{entry.name}: {result['match']}/{result['cases']} match, {result['mismatch']} mismatch, "
                  f"{result['error']} error, {result['fell_back']} fell back, {result['time_s']:.1f}s", flush=True)
    wall = time.perf_counter() - start
    print()
    _print_table(results)
    print()
    _print_details(results)
    total = {key: sum(r[key] for r in results) for key in ("cases", "match", "mismatch", "error", "fell_back", "skipped")}
    clean = sum(r["match"] == r["cases"] and r["fell_back"] == 0 for r in results)
    reachable = [r for r in results if not r["not_eager_reachable"] and not r["run_as_other_ops"]]
    print(f"\n{len(results)} entries, {total['cases']} cases: {total['match']} match, "
          f"{total['mismatch']} mismatch, {total['error']} error, {total['skipped']} skipped; "
          f"{total['fell_back']} cases ran an op on the CPU; {clean} entries match with no fallback; "
          f"{sum(r['own_op_on_gpu'] for r in reachable)}/{len(reachable)} entries ran their own op on the GPU, "
          f"{sum(bool(r['run_as_other_ops']) for r in results)} run as other ops by design (views, copies, "
          f"factories), {sum(bool(r['not_eager_reachable']) for r in results)} not eager-reachable; wall {wall:.0f}s "
          f"({rt.device_info()['name']})")
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump({"device": rt.device_info()["name"], "wall_s": wall, "totals": total, "entries": results}, f,
                      indent=1)
    return 1 if total["mismatch"] or total["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
