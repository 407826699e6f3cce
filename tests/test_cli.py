"""The `vkdelegate` command (cli/), as a user calls it: the console script where it is installed
(CI: it must be), and `python3 -m vkdelegate.cli` always. Each command on examples/models' mlp and
transformer_block, bad input (a missing or corrupt .pte, a factory that does not import, wrong
input shapes: one line, a non-zero exit, no traceback), and the chart files."""
import html.parser
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest
import torch

import vkdelegate.runtime as rt
from vkdelegate.cli.main import main
from vkdelegate.docs.__main__ import op_support_csv
from vkdelegate.examples.models import MODELS

pytestmark = pytest.mark.skipif(not rt.is_available(), reason="no Vulkan device")

MODELS_FACTORY = "vkdelegate.examples.models:MODELS."


def _invoker(kind):
    if kind == "module":
        return [sys.executable, "-m", "vkdelegate.cli"]
    script = shutil.which("vkdelegate")
    if script is None:
        if os.environ.get("CI"):
            pytest.fail("the vkdelegate console script is not on PATH (setup.py's entry_points; pip install -e .)")
        pytest.skip("the vkdelegate console script is not installed here (pip install -e . installs it)")
    return [script]


# The console script where it is installed (CI: it must be), else `python3 -m vkdelegate.cli` (the
# same main): each command once, since starting Python and importing executorch is most of the cost.
_KIND = "script" if shutil.which("vkdelegate") or os.environ.get("CI") else "module"


@pytest.fixture(scope="module")
def cli():
    """Runs `vkdelegate ARGS...`; returns the CompletedProcess (text)."""
    prefix = _invoker(_KIND)

    def call(*args, env=None, timeout=240):
        r = subprocess.run(prefix + [str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **(env or {})})
        assert "validation error" not in r.stderr, r.stderr[-3000:]
        return r

    call.kind = _KIND
    return call


def _ok(r):
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def _one_line_error(r, command, *words):
    """A non-zero exit with our one error line naming `words`, and no traceback."""
    assert r.returncode != 0, r.stdout
    assert "Traceback" not in r.stderr, r.stderr
    ours = [line for line in r.stderr.splitlines() if line.startswith(f"vkdelegate {command}: ")]
    assert len(ours) == 1, r.stderr
    for word in words:
        assert word in ours[0], ours[0]
    return ours[0]


@pytest.fixture(scope="module")
def mlp_pte(cli, tmp_path_factory):
    path = tmp_path_factory.mktemp(f"cli_{cli.kind}") / "mlp.pte"
    out = _ok(cli("export", MODELS_FACTORY + "mlp", "-o", path))
    return path, out


def test_devices(cli):
    out = _ok(cli("devices"))
    info = rt.device_info()
    assert f"* [0] {info['name']}" in out or f"] {info['name']}" in out
    assert f"subgroup size              {info['subgroup_size']}" in out
    assert "cooperative matrix" in out and "integer dot product" in out
    assert "picked: " in out and info["name"] in out.split("picked: ")[1]


def test_device_choice_follows_the_setting(cli):
    out = _ok(cli("devices", env={"VKDELEGATE_DEVICE": "0"}))
    assert "picked: [0] " in out and "VKDELEGATE_DEVICE=0 (an index)" in out
    r = cli("devices", env={"VKDELEGATE_DEVICE": "no such gpu"})
    _one_line_error(r, "devices", "no usable Vulkan device", "matches no device")


def test_ops_one_op(cli):
    out = _ok(cli("ops", "aten.gelu"))
    assert out.startswith("aten.gelu.default")
    assert "float16, float32" in out and "approximate" in out


def test_mlp_export_info_run_bench(cli, mlp_pte, tmp_path):
    path, export_out = mlp_pte
    assert "1 Vulkan partition(s)" in export_out and "aten.linear.default x3" in export_out
    assert "on CPU: nothing" in export_out

    info = _ok(cli("info", path))
    assert "1 delegate call(s) (1 VkDelegateBackend), 0 CPU kernel call(s)" in info
    # three linears, the first two with their relu in the epilogue, and the log_softmax
    assert "memory plan on" in info and "4 dispatches" in info
    assert "op #0 (et_vk.vkd_linear_act.default)" in info  # each dispatch with the shader it runs here

    model, (x,) = MODELS["mlp"]()
    torch.save((x,), tmp_path / "x.pt")
    run = _ok(cli("run", path, "--inputs", tmp_path / "x.pt", "--iters", 2, "--save", tmp_path / "out.pt"))
    assert "latency over 2 runs: min" in run and "output 0: float32[8, 10]" in run
    (out,) = torch.load(tmp_path / "out.pt")
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), rtol=1e-3, atol=1e-4)

    png, page = tmp_path / "ops.png", tmp_path / "ops.html"
    r = cli("bench", path, "--iters", 3, "--warmup", 1, "--profile-runs", 1, "--chart", png, "--chart", page,
            "--progress", "always")
    bench = _ok(r)
    assert "latency over 3 runs: min" in bench and "p95" in bench
    assert "aten.linear.default" in bench.split("GPU time per op")[1]
    assert "bench: " in r.stderr  # the progress bar
    _check_png(png)
    _check_html(page, "linear", "log_softmax")


def test_bad_input_is_one_line(cli, tmp_path):
    _one_line_error(cli("info", tmp_path / "missing.pte"), "info", "no such file")
    _one_line_error(cli("export", "no_such_module_here:make", "-o", tmp_path / "x.pte"), "export",
                    "cannot import module 'no_such_module_here'")


def test_debug_and_etdump_without_their_modules(cli, tmp_path):
    checked = False
    if importlib.util.find_spec("vkdelegate.cli.debug") is None:
        r = cli("debug", tmp_path / "m.pte")
        assert r.returncode == 2 and "vkdelegate.cli.debug is not installed" in r.stderr
        checked = True
    if importlib.util.find_spec("vkdelegate.runtime.etdump") is None:
        r = cli("run", tmp_path / "m.pte", "--etdump", tmp_path / "m.etdp")
        _one_line_error(r, "run", "vkdelegate.runtime.etdump")
        assert r.returncode == 2
        checked = True
    if not checked:
        pytest.skip("the debugger and the ETDump module are both installed: their own tests cover them")


def _check_png(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) > 5000


class _Html(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def _check_html(path, *labels):
    parser = _Html()
    parser.feed(path.read_text())
    parser.close()
    assert parser.tags[:2] == ["html", "head"] and "svg" in parser.tags and "script" not in parser.tags
    text = " ".join(parser.text)
    assert "GPU time per op" in text
    for label in labels:
        assert label in text, label
    return parser


# In-process (main(argv)): the rest of what the commands do, without starting Python again.

def _main(capsys, *args):
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def _main_error(capsys, command, *args):
    status, out, err = _main(capsys, command, *args)
    assert status != 0 and "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if line.startswith(f"vkdelegate {command}: ")]
    return line


def test_transformer_block_dynamic_export_and_html_chart(capsys, tmp_path):
    path = tmp_path / "tb.pte"
    status, out, err = _main(capsys, "export", MODELS_FACTORY + "transformer_block", "-o", path,
                             "--dynamic", "0.1=1..32")
    assert status == 0, err
    assert "1 Vulkan partition(s)" in out and "aten.gelu.default" in out and "on CPU: nothing" in out
    page = tmp_path / "ops.html"
    # A sequence length other than the example's 17: the dynamic dimension follows.
    status, out, err = _main(capsys, "bench", path, "--inputs", "2x5x128", "--iters", 2, "--warmup", 0,
                             "--profile-runs", 1, "--chart", page)
    assert status == 0, err
    assert "inputs float32[2, 5, 128]" in out
    assert _check_html(page, "linear", "vkd_linear_act", "vkd_ln_linear").tags.count("rect") >= 5
    status, out, err = _main(capsys, "info", path)
    assert status == 0, err
    assert "dispatches:" in out and "et_vk.vkd_ln_linear.default" in out


def test_export_says_what_stayed_on_cpu_and_why(capsys, tmp_path, monkeypatch):
    (tmp_path / "cli_models.py").write_text(
        "import torch\n"
        "class WithCumsum(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = torch.nn.Linear(16, 16)\n"
        "    def forward(self, x):\n"
        "        return torch.sigmoid(torch.cumsum(torch.relu(self.fc(x)), dim=1))\n"
        "def make():\n"
        "    return WithCumsum(), (torch.randn(3, 16),)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    status, out, err = _main(capsys, "export", "cli_models:make", "-o", tmp_path / "m.pte")
    assert status == 0, err
    assert "2 Vulkan partition(s)" in out
    assert "aten.cumsum.default: aten.cumsum.default is not in the vkdelegate op registry" in out
    status, out, err = _main(capsys, "info", tmp_path / "m.pte")
    assert status == 0, err
    assert "2 delegate call(s) (2 VkDelegateBackend), 1 CPU kernel call(s)" in out and "on CPU: aten::cumsum.out" in out


@pytest.fixture(scope="module")
def mlp_pte_in_process(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli_in_process") / "mlp.pte"
    assert main(["export", MODELS_FACTORY + "mlp", "-o", str(path)]) == 0
    return path


def test_bad_pte_and_wrong_inputs(capsys, tmp_path, mlp_pte_in_process):
    corrupt = tmp_path / "corrupt.pte"
    corrupt.write_bytes(mlp_pte_in_process.read_bytes()[:300])
    assert "not a readable ExecuTorch program" in _main_error(capsys, "info", corrupt)
    assert "not a readable ExecuTorch program" in _main_error(capsys, "bench", corrupt)
    assert "is a directory" in _main_error(capsys, "run", tmp_path)
    line = _main_error(capsys, "run", mlp_pte_in_process, "--inputs", "3x64")
    assert "float32[3, 64]" in line and "float32[8, 64]" in line
    line = _main_error(capsys, "run", mlp_pte_in_process, "--inputs", "8x64:int64")
    assert "input 0 is int64[8, 64]; the program expects float32[8, 64]" in line
    assert "takes 1 input(s), 2 given" in _main_error(capsys, "run", mlp_pte_in_process, "--inputs", "8x64", "8x64")
    assert ".png or .html" in _main_error(capsys, "bench", mlp_pte_in_process, "--chart", tmp_path / "c.svg")


def test_verbose_shows_the_traceback(capsys, tmp_path):
    status, _, err = _main(capsys, "--verbose", "export", "vkdelegate.examples.models:NoSuchFactory",
                           "-o", tmp_path / "x.pte")
    assert status == 1 and "Traceback" in err and "has no 'NoSuchFactory'" in err
    status, _, err = _main(capsys, "export", "vkdelegate.examples.models:NoSuchFactory", "-o", tmp_path / "x.pte")
    assert status == 1 and "Traceback" not in err


def test_ops_unknown_op(capsys):
    assert "not in the vkdelegate op registry" in _main_error(capsys, "ops", "aten.cumsum")

def test_ops_csv_is_the_committed_table(capsys):
    assert main(["ops", "--csv"]) == 0
    assert capsys.readouterr().out == op_support_csv()


def test_input_spec_errors(capsys):
    assert main(["run", "x.pte", "--inputs", "8xx64"]) == 1
    assert "expected 'random', a file.pt, or shapes like 8x64" in capsys.readouterr().err
    assert main(["export", "vkdelegate.examples.models:MODELS.mlp", "-o", "/tmp/m.pte", "--dynamic", "0.9=1..4"]) == 1
    assert "input 0 has 2 dimensions" in capsys.readouterr().err
