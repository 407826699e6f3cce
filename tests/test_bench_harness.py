"""benchmarks/bench_gpu.py's logic that runs without CUDA: the error check of a quantized row
(our runner's output against torchao's eager output on the same dequantized weights, as
make_bundle.py stores it), and the kernel table's like-for-like ratios and GEMV bar line."""
import json
import os
import sys

import pytest
import torch

import vkdelegate.runtime as rt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import bench_gpu  # noqa: E402
from cases import GEMV_BAR_CASE, PeriodicLinear  # noqa: E402


def test_quantized_row_error_check_against_the_stored_reference(tmp_path, monkeypatch):
    pytest.importorskip("torchao")
    import make_bundle
    from vkdelegate.quant.torchao_configs import quantized, weight_only_config

    module, inputs = PeriodicLinear(64, 200), (torch.randn(2, 64),)
    module = quantized(module, weight_only_config(4, 32))
    pte, delegates, on_cpu = make_bundle.lower(module, inputs)
    assert delegates == 1 and not on_cpu
    (tmp_path / "q.pte").write_bytes(pte)
    reference = make_bundle.write_reference(str(tmp_path / "refs" / "q"), module, inputs)
    assert reference["dir"] == os.path.join("refs", "q")
    assert reference["outputs"] == [{"shape": [2, 200], "dtype": "float32"}]
    monkeypatch.setattr(bench_gpu, "RUNNER", rt.runner_path())
    monkeypatch.setattr(bench_gpu, "HERE", str(tmp_path))
    refs = bench_gpu.read_references(str(tmp_path), reference)
    ref_inputs = bench_gpu.read_inputs(str(tmp_path), reference, inputs)
    torch.testing.assert_close(ref_inputs[0], inputs[0], rtol=0, atol=0)
    result = bench_gpu.run_checked("q.pte", ref_inputs, refs, 1, ["--gpu-runs", "2", "--flush-l2", "1"])
    assert result["max_rel_err"] < 1e-5
    assert result["gpu_us"] > 0 and result["gpu_us_flushed"] > 0
    # The period (96 rows) leaves rows 96.. equal to rows 0..: a kernel reading the wrong rows fails.
    assert bench_gpu.max_relative_error(result["outputs"], [refs[0].roll(1, dims=1)]) > 0.1
    (tmp_path / "output_0.bin").write_bytes(result["outputs"][0].numpy().tobytes())
    with pytest.raises(RuntimeError, match="output 0 has 1600 bytes"):
        bench_gpu.read_outputs(str(tmp_path), [torch.zeros(3, 200)])


def _runner_result(us, flushed_us):
    return {"gpu_us": us, "gpu_us_flushed": flushed_us, "gpu_us_runs": [us], "gpu_us_flushed_runs": [flushed_us],
            "load_ms": 10.0, "max_rel_err": 1e-6, "profile": "", "constant_bytes": 146_800_640}


def test_kernel_rows_divide_like_by_like_and_report_the_gemv_bar():
    micro = {"name": "mm", "kind": "micro", "working_set_bytes": 12e6}
    # ours 10 us warm, 20 us flushed; PyTorch 5 us warm, 40 us flushed (ms in torch_kernel_ms)
    bench_gpu.kernel_row(micro, _runner_result(10.0, 20.0), {"warm": 0.005, "flushed": 0.040, "warm_single": 0.006},
                         2e9, "TFLOP/s")
    assert micro["ratio"] == pytest.approx(0.5) and micro["ratio_flushed"] == pytest.approx(2.0)
    assert micro["ours"] == pytest.approx(200.0) and micro["torch_flushed"] == pytest.approx(50.0)

    bar = {"name": GEMV_BAR_CASE, "kind": "quant", "working_set_bytes": 147e6, "weight_bytes": 146_800_640}
    # Each side's own bytes: GB/s differ by bytes, the ratio is of times only.
    bench_gpu.kernel_row(bar, _runner_result(60.0, 80.0), {"warm": 0.3, "flushed": 0.32, "warm_single": 0.3},
                         (146_900_000, 470_000_000), "GB/s of weights + activations as stored")
    bar["weights_gbs_flushed"] = 146_800_640 / bar["ours_flushed_us"] / 1e3
    assert bar["ours_flushed"] == pytest.approx(146_900_000 / 80e-6 / 1e9)
    assert bar["torch_flushed"] == pytest.approx(470_000_000 / 320e-6 / 1e9)
    assert bar["ratio_flushed"] == pytest.approx(4.0)
    meta = {"date": "2026-11-25", "torch": "2.11", "gpu": "H100", "command": "bash run_gpu.sh $OUT"}
    text = bench_gpu.markdown(meta, [micro, bar])
    assert "| mm (TFLOP/s) | 12.0 | 200.0 | 400.0 | 0.50x | 100.0 | 50.0 | 2.00x | 1.0e-06 | 10 |" in text
    assert f"4-bit GEMV bar (issue 16): {GEMV_BAR_CASE}, L2 flushed: 1835 GB/s" in text and "missed" in text
    json.dumps([micro, bar])  # results.json


def test_combine_carries_only_unmeasured_model_rows_and_marks_them():
    import combine_results

    old = {"meta": {"date": "2026-11-23"}, "rows": [
        {"name": "mm", "kind": "micro", "ours": 1.0},  # an old kernel row: never carried
        {"name": "resnet50", "kind": "model", "ours": 2.0, "torch_eager": 3.0, "torch_graph": 2.2, "ratio": 0.9,
         "load_ms": 150.0},
        {"name": "mlp", "kind": "model", "ours": 9.0}]}
    new_mlp = {"name": "mlp", "kind": "model", "ours": 0.04, "torch_eager": 0.1, "torch_graph": 0.02, "ratio": 2.0,
               "load_ms": 50.0}
    new = {"meta": {"date": "2026-11-25", "torch": "2.11", "gpu": "H100", "command": "bash run_gpu.sh $OUT"},
           "rows": [new_mlp]}
    meta, rows = combine_results.combine([new], old)
    assert [r["name"] for r in rows] == ["mlp", "resnet50"]
    assert "measured" not in rows[0] and rows[0]["ours"] == 0.04 and rows[1]["measured"] == "2026-11-23"
    text = bench_gpu.markdown(meta, rows)
    assert "| resnet50 (measured 2026-11-23) | 2.000 |" in text and "--carry-models" in text


def _model_row(name, ours, graph, compiled=None, run=None, kind="model"):
    row = {"name": name, "kind": kind, "unit": "ms", "ours": ours, "torch_eager": 5 * graph, "torch_graph": graph,
           "load_ms": 20.0, "max_rel_err": 1e-6, "device": "H100 (Vulkan)"}
    if compiled is None:
        row["compile_error"] = "RuntimeError: inductor failed"
    else:
        row.update(torch_compile=compiled, compile_s=42.0, compile_graph_breaks=0, compile_cudagraph_skips=0)
    bench_gpu.finish_model_row(row)
    return row


def test_model_rows_are_held_to_the_best_of_graph_and_compile():
    row = _model_row("resnet18_fp16", ours=0.45, graph=0.48, compiled=0.40)
    assert row["ratio"] == pytest.approx(0.45 / 0.40) and row["ratio_graph"] == pytest.approx(0.45 / 0.48)
    assert row["best"] == "torch.compile"
    failed = _model_row("unet", ours=0.3, graph=0.4)  # no compile figure: the graph is the best there is
    assert failed["ratio"] == pytest.approx(0.75) and failed["best"] == "CUDA graph"


def _run(date, command, rows):
    return {"meta": {"date": date, "torch": "2.11", "gpu": "H100", "command": command,
                     "made_with": "python benchmarks/make_bundle.py --full-table"}, "rows": rows}


def _kernel(name, ratio, ratio_flushed):
    row = {"name": name, "kind": "micro", "working_set_bytes": 1e6, "device": "H100 (Vulkan)"}
    bench_gpu.kernel_row(row, _runner_result(10.0, 10.0),
                         {"warm": ratio * 0.010, "flushed": ratio_flushed * 0.010, "warm_single": 0.01}, 1e9,
                         "TFLOP/s")
    return row


def test_combine_two_runs_into_one_table_with_the_bars(tmp_path):
    import combine_results
    from cases import BAR_MODELS, FLOOR_CASE

    first = [_model_row(m, ours=0.9, graph=1.0, compiled=1.1) for m in BAR_MODELS]
    first.append(_model_row(FLOOR_CASE, ours=0.012, graph=0.008, compiled=0.009, kind="floor"))
    first += [_kernel("mm_fp16_4096", 0.24, 0.25), _kernel("conv3x3_128c_28_b32", 0.85, 0.9)]
    second = [_model_row(m + "_fp16", ours=0.5, graph=1.0, compiled=0.8) for m in BAR_MODELS]
    second[1] = _model_row("transformer_block_fp16", ours=0.2, graph=0.1, compiled=0.25)  # over the bar
    second[2] = _model_row("llama_fp16", ours=0.3, graph=0.4)  # compile failed
    second.append(_kernel("bmm_fp16_3x1000x1024x1032", 0.9, 0.7))
    paths = []
    for k, rows in ((1, first), (2, second)):
        (tmp_path / str(k)).mkdir()
        paths.append(str(tmp_path / str(k) / "results.json"))
        with open(paths[-1], "w") as f:
            json.dump(_run("2026-11-25", f"bash benchmarks/bundle_table_{k}/run_gpu.sh $OUT/{k}", rows), f)
    combine_results.main(paths + ["--out", str(tmp_path)])
    text = (tmp_path / "latest.md").read_text()
    table = json.loads((tmp_path / "latest.json").read_text())
    assert len(table["rows"]) == 20 and {r["run"] for r in table["rows"]} == {1, 2}
    assert f"Table: `python benchmarks/combine_results.py {paths[0]} {paths[1]} --out {tmp_path}`" in text
    assert "Runs (the table's run column): 1: `bash benchmarks/bundle_table_1/run_gpu.sh $OUT/1` (2026-11-25); " \
           "2: `bash benchmarks/bundle_table_2/run_gpu.sh $OUT/2`" in text
    assert "Bundle: `python benchmarks/make_bundle.py --full-table`" in text  # once, not once per run
    bars = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| ")}
    model_bar = next(v for k, v in bars.items() if k.startswith("every model row"))
    assert "15 of 16 rows at or under; worst transformer_block_fp16 2.00x; over: transformer_block_fp16 2.00x" \
           in model_bar and "CUDA graph only): llama_fp16" in model_bar and model_bar.endswith("| <= 1.0x | missed |")
    floor = next(v for k, v in bars.items() if k.startswith("per-execute floor"))
    assert "add16: 12.0 us (PyTorch CUDA graph 8.0 us) | <= 15 us | met |" in floor
    assert bars["mm_fp16_4096 vs cuBLAS"].endswith("| 0.24x warm (0.25x L2 flushed) | >= 0.5x | missed |")
    assert bars["bmm_fp16_3x1000x1024x1032 vs cuBLAS"].endswith("| >= 0.8x | met |")  # warm decides
    assert bars["conv3x3_128c_28_b32 vs cuDNN"].endswith("| >= 0.8x | met |")
    assert bars["linear_fp16_3x77x1000_1234 vs cuBLAS"].endswith("| not in this table | >= 0.8x | not measured |")
    # model rows: ours / best, ours / graph, the compile time, and the run each came from
    assert "| resnet18_fp16 | 0.500 | 5.000 | 1.000 | 0.800 | 42 | 0.62x | 0.50x | 1.0e-06 | 20 | 2 |" in text
    assert "| llama_fp16 | 0.300 | 2.000 | 0.400 | failed |  | 0.75x | 0.75x | 1.0e-06 | 20 | 2 |" in text
    assert "- torch.compile of llama_fp16: RuntimeError: inductor failed" in text
    assert "| mm_fp16_4096 (TFLOP/s) |" in text and text.count(" | 1 |") >= 10


def test_one_run_has_no_run_column_and_missing_bar_rows_say_so():
    rows = [_model_row("mlp", ours=0.04, graph=0.02, compiled=0.17)]
    text = bench_gpu.markdown(_run("2026-11-25", "bash run_gpu.sh $OUT", rows)["meta"], rows)
    assert "| mlp | 0.040 | 0.100 | 0.020 | 0.170 | 42 | 2.00x | 2.00x | 1.0e-06 | 20 |\n" in text
    assert "Runs (" not in text
    lines = dict((b, s) for b, _, _, s in bench_gpu.bar_lines(rows))
    assert list(lines.values()) == ["missed", "not measured", "not measured", "not measured", "not measured",
                                    "not measured"]


def test_compile_child_failures_and_timeouts_keep_the_row(tmp_path, monkeypatch):
    # A copy of the bundle's scripts with a manifest of the floor case; no CUDA here, so the child fails.
    for name in ("bench_gpu.py", "cases.py"):
        (tmp_path / name).write_text(open(os.path.join(os.path.dirname(bench_gpu.__file__), name)).read())
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"cases": [{"name": "add16", "kind": "floor", "pte": "add16.pte"}], "command": "", "made_with": ""}))
    monkeypatch.setattr(bench_gpu, "__file__", str(tmp_path / "bench_gpu.py"))
    monkeypatch.setattr(bench_gpu, "HERE", str(tmp_path))
    if not torch.cuda.is_available():
        failed = bench_gpu.run_compile("add16", 5, timeout=120)
        assert "CUDA" in failed["compile_error"] and "compile_log" in failed and "torch_compile" not in failed
    slow = bench_gpu.run_compile("add16", 5, timeout=0.05)
    assert slow["compile_error"] == "did not compile and run within 0 s"


def test_full_table_plan_fits_every_bundle_or_refuses_up_front():
    import make_bundle

    mib = 2**20
    cases = [("model", "big", None, 40 * mib, 100), ("model", "mid", None, 30 * mib, 200),
             ("model", "mid2", None, 20 * mib, 200)] + [("micro", f"k{i}", None, mib // 2, 10) for i in range(20)]
    bundles = make_bundle.plan_bundles(cases, 60 * mib, 4 * mib, limit_s=480, bundle_s=40)
    assert sorted(c[1] for b in bundles for c in b) == sorted(c[1] for c in cases)  # each case once
    assert len(bundles) == 2  # 100 MiB of cases (105 planned) in bundles of 56: two
    for b in bundles:
        assert 4 * mib + sum(c[3] for c in b) * make_bundle.MARGIN <= 60 * mib
        assert 40 + sum(c[4] for c in b) <= 480
    assert [c[1] for c in bundles[1]] == sorted((c[1] for c in bundles[1]), key=[c[1] for c in cases].index)
    # the cases named first go into the first bundle, the others as before
    firsts = make_bundle.plan_bundles(cases, 60 * mib, 4 * mib, limit_s=480, bundle_s=40, first=["k19", "k0", "mid"])
    assert {"k19", "k0", "mid"} <= {c[1] for c in firsts[0]} and len(firsts) == 2
    assert sorted(c[1] for b in firsts for c in b) == sorted(c[1] for c in cases)
    # time alone splits too: 8 cases of 100 s in runs of at most 480 s
    assert len(make_bundle.plan_bundles([("model", f"m{i}", None, mib, 100) for i in range(8)], 60 * mib, 0,
                                        limit_s=480, bundle_s=40)) == 2
    with pytest.raises(ValueError, match="huge alone"):
        make_bundle.plan_bundles(cases + [("model", "huge", None, 58 * mib, 10)], 60 * mib, 4 * mib)


def test_size_estimate_holds_for_a_real_compressed_pte():
    import lzma

    import make_bundle

    for kind, name, options in (("model", "mlp", None), ("model", "mlp_fp16", {"force_fp16": True}),
                                ("floor", "add16", None)):
        estimate, seconds = make_bundle.estimate_case(kind, name, options)
        module, inputs = make_bundle._factory(kind, name)()
        make_bundle.round_weights_bf16(module)
        pte, delegates, on_cpu = make_bundle.lower(module, inputs, options)
        assert delegates == 1 and not on_cpu and seconds > 0
        actual = len(lzma.compress(pte, preset=6))
        assert estimate / 2 - 1000 <= actual <= estimate, (name, actual, estimate)  # 1000: the program's own


def test_bundle_manifest_says_how_each_case_is_run(tmp_path):
    import make_bundle

    out = tmp_path / "bundle_table_1"
    cases = [("micro", "conv3x3_fp16_odd_s2_b2", None), ("model", "mlp_fp16", {"force_fp16": True}),
             ("floor", "add16", None)]
    size = make_bundle.build_bundle(str(out), cases, True, False, "python benchmarks/make_bundle.py --full-table",
                                    "bash benchmarks/bundle_table_1/run_gpu.sh $OUT/1", {"bundle": 1, "bundles": 4})
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"] == "bash benchmarks/bundle_table_1/run_gpu.sh $OUT/1" and manifest["bundles"] == 4
    assert manifest["cases"] == [
        {"name": "conv3x3_fp16_odd_s2_b2", "kind": "micro", "pte": "conv3x3_fp16_odd_s2_b2.pte", "weights": "bf16_rounded"},
        {"name": "mlp_fp16", "kind": "model", "pte": "mlp_fp16.pte", "weights": "bf16_rounded", "model": "mlp",
         "fp16": True},
        {"name": "add16", "kind": "floor", "pte": "add16.pte"}]  # no weights to round
    for name in ("vkdelegate_runner", "bench_gpu.py", "cases.py", "run_gpu.sh", "gpu_vulkan.sh", "models/mlp.py",
                 "add16.pte", "mlp_fp16.pte"):
        assert (out / name).is_file(), name
    assert size == make_bundle.folder_bytes(str(out))
