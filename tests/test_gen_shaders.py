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


PARAMS_HEADER = """// params-struct: DemoParams
layout(set = 0, binding = PARAMS_BINDING) uniform Params {
  int M, N;  // sizes
  float alpha;
  uint flags;
} p;
"""


def _params_header(tmp_path, glslh, file="demo_params.glslh"):
    src = tmp_path / "glsl"
    src.mkdir()
    (src / file).write_text(glslh)
    out = tmp_path / "shader_params.h"
    r = subprocess.run([sys.executable, GEN, "--src-dir", str(src), "--params-header", str(out)],
                       capture_output=True, text=True)
    return r, out


def test_params_header_mirrors_the_block(tmp_path):
    r, out = _params_header(tmp_path, PARAMS_HEADER)
    assert r.returncode == 0, r.stderr
    h = out.read_text()
    assert "struct DemoParams {\n  int32_t M, N;  // sizes\n  float alpha;\n  uint32_t flags;\n};" in h
    assert "static_assert(offsetof(DemoParams, flags) == 12);" in h
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx:  # the layout assertions hold for the compiler at hand
        c = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-x", "c++", str(out)], capture_output=True, text=True)
        assert c.returncode == 0, c.stderr


def test_params_header_reads_a_shaders_own_block(tmp_path):
    """A block only one shader uses stays in that shader."""
    r, out = _params_header(tmp_path, PARAMS_HEADER + "void main() {}\n", file="demo.glsl")
    assert r.returncode == 0, r.stderr
    assert "// glsl/demo.glsl\nstruct DemoParams {" in out.read_text()


def test_params_header_ivec4_arrays_as_int_arrays(tmp_path):
    """An ivec4 array at a multiple of 16 bytes is an int32_t array of 4 per element; the
    next member follows it, as std140 places them."""
    r, out = _params_header(tmp_path, PARAMS_HEADER.replace("int M, N;  // sizes", "ivec4 sizes[2];\n  ivec4 one;\n  int M, N;"))
    assert r.returncode == 0, r.stderr
    h = out.read_text()
    assert "  int32_t sizes[8];\n  int32_t one[4];\n  int32_t M, N;" in h
    assert "static_assert(offsetof(DemoParams, M) == 48);" in h
    assert "static_assert(sizeof(DemoParams) == 64" in h
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx:
        c = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-x", "c++", str(out)], capture_output=True, text=True)
        assert c.returncode == 0, c.stderr


def test_params_header_refuses_an_ivec4_array_std140_pads(tmp_path):
    r, _ = _params_header(tmp_path, PARAMS_HEADER.replace("float alpha;", "ivec4 sizes[2];"))
    assert r.returncode != 0
    assert "must start at a multiple of 16 bytes (it starts at 8" in r.stderr


@pytest.mark.parametrize("member", ["vec4 bounds;", "int sizes[4];"])
def test_params_header_refuses_members_std140_pads(tmp_path, member):
    r, _ = _params_header(tmp_path, PARAMS_HEADER.replace("float alpha;", member))
    assert r.returncode != 0
    assert "DemoParams member" in r.stderr


def test_variants_from_a_table(tmp_path):
    """A shader's `// variants-from:` table gives its variants, then its dtypes apply as to `// variant` lines."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_shaders", GEN)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    (tmp_path / "demo_variants.py").write_text(
        "def shader_variants(shader):\n"
        "    return [(f'{shader}_{n}', [f'N={n}']) for n in (1, 2)]\n")
    shader = tmp_path / "demo.glsl"
    shader.write_text("// variants-from: demo_variants.py\n// dtypes: f32 f16\n#version 450\nvoid main() {}\n")
    found = dict(gen.variants_of(str(shader)))
    assert sorted(found) == ["demo_1_f16", "demo_1_f32", "demo_2_f16", "demo_2_f32"]
    assert "N=2" in found["demo_2_f16"] and "T=float16_t" in found["demo_2_f16"]
