"""glsl/gen_shaders.py: variants, dtypes, and shaders whose extensions the glslc at hand lacks."""
import os
import shutil
import subprocess
import sys

import pytest

GEN = os.path.join(os.path.dirname(__file__), "..", "glsl", "gen_shaders.py")
GLSLC = os.environ.get("VKDELEGATE_GLSLC") or shutil.which("glslc")

PLAIN = """// variant twice_a: K=2
// variant thrice_a: K=3
// dtypes: f32 i32
#version 450
layout(local_size_x = 1) in;
layout(binding = 0) buffer B { T x[]; };
void main() { x[0] = x[0] * T(K); }
"""
NEEDS_UNKNOWN = """// requires: GL_EXT_no_such_extension_exists
#version 450
#extension GL_EXT_no_such_extension_exists : require
layout(local_size_x = 1) in;
void main() {}
"""


@pytest.mark.skipif(GLSLC is None, reason="no glslc")
def test_variants_and_left_out_shaders(tmp_path):
    src = tmp_path / "glsl"
    src.mkdir()
    (src / "plain.glsl").write_text(PLAIN)
    (src / "needs_unknown.glsl").write_text(NEEDS_UNKNOWN)
    out_cpp = tmp_path / "shaders.cpp"
    r = subprocess.run([sys.executable, GEN, "--glslc", GLSLC, "--src-dir", str(src),
                        "--out-cpp", str(out_cpp), "--spv-dir", str(tmp_path / "spv")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "needs_unknown.glsl (needs GL_EXT_no_such_extension_exists" in r.stderr
    cpp = out_cpp.read_text()
    names = sorted(line.split('"')[1] for line in cpp.splitlines() if line.startswith('  {"'))
    assert names == ["thrice_a_f32", "thrice_a_i32", "twice_a_f32", "twice_a_i32"]
    assert "kNumShaderBinaries = 4;" in cpp
