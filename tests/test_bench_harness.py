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
