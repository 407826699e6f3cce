"""The VKDELEGATE_* settings: one table (runtime/settings.def), parsed into typed
fields; graph settings given per graph (Graph(blob, overrides=...)) or per scope
(vkdelegate.runtime.overrides()); every unknown name or bad value a clear error; the
README's table is the table's rendering.

`python3 tests/test_settings.py` prints the README block for the current table."""
import pathlib
import re
import threading

import pytest
import torch

import vkdelegate.runtime as rt

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- settings table: begin -->", "<!-- settings table: end -->"
# Read by setup.py / CMake at build time, not by the runtime.
BUILD_VARIABLES = {"VKDELEGATE_GLSLC", "VKDELEGATE_BUILD_DIR", "VKDELEGATE_BUILD_TYPE",
                   "VKDELEGATE_EXECUTORCH_DIR", "VKDELEGATE_OUTPUT_DIR", "VKDELEGATE_SANITIZE",
                   # the test stages' own (scripts/test.sh, tests/sanitizers.py), not the runtime's
                   "VKDELEGATE_FUZZ_SECONDS", "VKDELEGATE_FUZZ_SEEDS", "VKDELEGATE_FUZZ_SEED", "VKDELEGATE_FUZZ_RUNS", "VKDELEGATE_SANITIZE_BUILD_DIR"}


def render(table):
    """The README's block: one row per setting."""
    def values(s):
        if s["type"] == "flag":
            return "0, 1"
        if s["type"] == "choice":
            return ", ".join(f"`{v}`" for v in s["values"])
        if s["type"] == "int":
            lo, hi = s["range"]
            return f"{lo}..{hi}"
        return "text"

    lines = [BEGIN, "| setting | scope | values | default | what it does |", "|---|---|---|---|---|"]
    for s in table:
        default = f"`{s['default']}`" if s["default"] else "unset"
        lines.append(f"| `{s['name']}` | {s['scope']} | {values(s)} | {default} | {s['meaning']} |")
    lines.append(END)
    return "\n".join(lines)


def test_readme_table_is_the_settings_table():
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index(BEGIN):readme.index(END) + len(END)]
    assert block == render(rt.settings_table()), "README's settings table is stale: python3 tests/test_settings.py"


def test_tile_settings_accept_the_variant_tables_names():
    """The tile settings' values are the variant tables' names (glsl/*_variants.py), in order."""
    from kernel_check import variant_table
    conv, coopmm = variant_table("conv_variants"), variant_table("coopmm_variants")
    values = {s["name"]: s["values"] for s in rt.settings_table() if s["type"] == "choice"}
    assert values["VKDELEGATE_CONV_GEMM"] == list(conv.GEMM)
    assert values["VKDELEGATE_COOPCONV_TILE"] == list(conv.COOP)
    assert values["VKDELEGATE_TILED_CONV"] == ["0", "1"] + list(conv.TILED)
    assert values["VKDELEGATE_COOPMM_TILE"] == list(coopmm.VARIANTS)
    assert values["VKDELEGATE_QLINEAR_COOP_TILE"] == list(coopmm.QLINEAR_TILES)


def test_every_variable_named_is_in_the_table():
    """The runtime's C++ and the README name no VKDELEGATE_ variable the table lacks,
    and no C++ file but settings.cpp reads the environment for one."""
    names = {s["name"] for s in rt.settings_table()}
    assert len(names) == len(rt.settings_table())
    sources = [p for p in (ROOT / "runtime").rglob("*") if p.suffix in (".cpp", ".h", ".def")]
    for path in sources + [ROOT / "README.md"]:
        text = path.read_text()
        unknown = set(re.findall(r"VKDELEGATE_[A-Z0-9_]*[A-Z0-9]", text)) - names - BUILD_VARIABLES
        assert not unknown, (path, unknown)
        if path.suffix in (".cpp", ".h") and path.name not in ("settings.cpp", "runner.cpp"):
            assert not re.search(r"getenv\(\s*\"VKDELEGATE_", text), path


@pytest.fixture(scope="module")
def softmax_blob():
    from helpers import lower
    from helpers import delegate_blob

    class Softmax(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x, -1)

    return delegate_blob(lower(Softmax(), (torch.randn(4, 40),)))


@pytest.mark.parametrize("overrides,message", [
    ({"NO_SUCH": 1}, "unknown setting 'NO_SUCH'; a graph can override NO_SUBGROUP_OPS, "),
    ({"VALIDATION": True}, "VKDELEGATE_VALIDATION is a process setting"),
    ({"NO_COOPMAT": "maybe"}, "VKDELEGATE_NO_COOPMAT=maybe: expected 0 or 1"),
    ({"COOPMM_GROUP": -1}, "VKDELEGATE_COOPMM_GROUP=-1: expected an integer from 0 to 1024"),
    ({"COOPMM_GROUP": "8x"}, "VKDELEGATE_COOPMM_GROUP=8x: expected an integer"),
    ({"COOPCONV_TILE": "xl"}, "VKDELEGATE_COOPCONV_TILE=xl: expected one of l, m, s"),
    ({"TILED_MM": 3.5}, "VKDELEGATE_TILED_MM: expected a bool, an int or a str, not float"),
])
def test_bad_overrides_are_clear_errors(softmax_blob, overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        rt.Graph(softmax_blob, overrides=overrides)
    with pytest.raises(ValueError, match=re.escape(message)):
        with rt.overrides(**overrides):
            pass


def test_scoped_overrides_nest_end_and_stay_on_their_thread(softmax_blob):
    if not rt.device_info()["subgroup_arithmetic"]:
        pytest.skip("the device has no subgroup arithmetic: NO_SUBGROUP_OPS changes nothing")

    def subgroup(**overrides):
        return any("_sg" in s for s in rt.Graph(softmax_blob, **overrides).shaders())

    assert subgroup()
    with rt.overrides(NO_SUBGROUP_OPS=True):
        assert not subgroup()
        assert subgroup(overrides={"NO_SUBGROUP_OPS": None})  # None: the default
        with rt.overrides(NO_SUBGROUP_OPS=False):
            assert subgroup()
        assert not subgroup()
        other = []
        thread = threading.Thread(target=lambda: other.append(subgroup()))
        thread.start()
        thread.join()
        assert other == [True]
    assert subgroup()
    with pytest.raises(RuntimeError, match="boom"):
        with rt.overrides(NO_SUBGROUP_OPS=True):
            raise RuntimeError("boom")
    assert subgroup()


def test_bad_environment_values_are_clear_errors():
    """From the environment (parsed as the runtime parses its own, once at start): a bad
    process setting leaves no device (Context::create fails with this message), a bad
    graph setting fails each graph load, naming the variable and what it accepts."""
    parse = rt._vkdelegate._parse_environment
    assert parse({"VKDELEGATE_TILED_CONV": "c64", "VKDELEGATE_FENCE_SPIN_US": "0", "PATH": "x"}) == ("", "")
    process, graph = parse({"VKDELEGATE_FENCE_SPIN_US": "soon", "VKDELEGATE_TILED_CONV": "c99",
                            "VKDELEGATE_VALIDATION": "1"})
    assert process == "environment: VKDELEGATE_FENCE_SPIN_US=soon: expected an integer from 0 to 10000000"
    assert graph == "environment: VKDELEGATE_TILED_CONV=c99: expected one of 0, 1, c32, c64, c128"


if __name__ == "__main__":
    print(render(rt.settings_table()))
