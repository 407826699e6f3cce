#!/usr/bin/env python3
"""Compiles every glsl/*.glsl to SPIR-V with glslc and writes one C++ file that
embeds them all (the runtime's kShaderBinaries table).

A shader declares its variants in comment lines
    // variant NAME: DEFINE=VALUE DEFINE2=VALUE2
(no spaces inside a definition); a shader without such lines is one variant
named after its file. A line
    // dtypes: f32 i32
builds every variant once per storage type, named NAME_f32, NAME_i32, with the
element type T, its 4-vector T4, the compute type CT (float for f32 and f16: half values are
computed in float and rounded once on store, as PyTorch computes half) and
IS_FLOAT defined (the runtime picks the variant with storage_suffix() of the
tensor's storage type: f32, f16, i32, or i64 for int64 on devices with shaderInt64). A variant may narrow that list for
itself, for bodies that only make sense for some types:
    // variant NAME(i32): DEFINE=VALUE

A shader whose variants come from a table (a Python file beside the shaders, one
place for a table the runtime and the tests read too) declares
    // variants-from: coopmm_variants.py
and gets the variants the table's shader_variants(shader name) lists. With
--table-header coopmm_variants.py=OUT the script writes the table's cpp_header()
to OUT (the runtime's copy).

A shader whose reductions come from workgroup_reduce.glslh declares
    // subgroup-variants
and every variant is also built as NAME_sg (WG_SUBGROUP=1: subgroup arithmetic);
the runtime's variant() takes it where the device has subgroup arithmetic.

A shader that needs GLSL extensions newer compilers have declares them:
    // requires: GL_KHR_cooperative_matrix GL_EXT_integer_dot_product
    // target-env: vulkan1.3        (optional; default vulkan1.1)
When the glslc at hand cannot compile them (Debian 12's cannot; scripts/setup.sh
fetches a newer one), the shader's variants are left out with a note, and the
runtime, finding no binary (find_shader returns null), takes its fallback.

A parameter block the runtime fills (in a .glslh where shaders share it, else in
its shader) is marked
    // params-struct: ConvParams
on the line before its `uniform` declaration. With --params-header the script
writes a C++ header with one struct per marked block, same fields and order, so
the runtime fills exactly what the shaders read. Only int, uint and float
members are allowed, and ivec4s and ivec4 arrays (int32_t arrays of 4 per element in
C++) that start at a multiple of 16 bytes: std140 places those as C++ does (other vectors and
arrays would need padding the struct would not have).
"""
import argparse
import importlib.util
import concurrent.futures
import os
import re
import subprocess
import sys

VARIANT = re.compile(r"^//\s*variant\s+(\w+)\s*(?:\(([\w ]+)\))?\s*:(.*)$")
DTYPES = re.compile(r"^//\s*dtypes\s*:(.*)$")
SUBGROUP_VARIANTS = re.compile(r"^//\s*subgroup-variants\s*$")
REQUIRES = re.compile(r"^//\s*requires\s*:(.*)$")
TARGET_ENV = re.compile(r"^//\s*target-env\s*:\s*(\S+)\s*$")
VARIANTS_FROM = re.compile(r"^//\s*variants-from\s*:\s*(\w+\.py)\s*$")
PARAMS_STRUCT = re.compile(r"^//\s*params-struct\s*:\s*(\w+)\s*$")
PARAMS_SCALARS = {"int": "int32_t", "uint": "uint32_t", "float": "float"}
DEFAULT_TARGET_ENV = "vulkan1.1"
STORAGE_DEFINES = {
    "f32": ["T=float", "CT=float", "IS_FLOAT=1", "T4=vec4"],
    # Float16: STORAGE_F16 turns on the 16-bit extensions in common.glslh.
    "f16": ["T=float16_t", "CT=float", "IS_FLOAT=1", "STORAGE_F16=1", "T4=f16vec4"],
    "i32": ["T=int", "CT=int", "IS_FLOAT=0", "T4=ivec4"],
    # int64 where the device has shaderInt64: STORAGE_I64 turns on the 64-bit integer extension in
    # common.glslh (elsewhere the graph stores int64 as int32 and takes the i32 variants).
    "i64": ["T=int64_t", "CT=int64_t", "IS_FLOAT=0", "STORAGE_I64=1", "T4=i64vec4"],
}


def load_table(path):
    """The variant table module at `path` (a glsl/*_variants.py)."""
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variants_of(path):
    found, dtypes, subgroup = [], None, False
    with open(path) as f:
        for line in f:
            m = VARIANTS_FROM.match(line.strip())
            if m:
                table = load_table(os.path.join(os.path.dirname(path), m.group(1)))
                shader = os.path.splitext(os.path.basename(path))[0]
                found += [(name, defines, None) for name, defines in table.shader_variants(shader)]
            if SUBGROUP_VARIANTS.match(line.strip()):
                subgroup = True
            m = VARIANT.match(line.strip())
            if m:
                only = m.group(2).split() if m.group(2) else None
                found.append((m.group(1), m.group(3).split(), only))
            m = DTYPES.match(line.strip())
            if m:
                dtypes = m.group(1).split()
                unknown = set(dtypes) - set(STORAGE_DEFINES)
                if unknown:
                    sys.exit(f"{path}: unknown dtypes {sorted(unknown)}")
    if not found:
        found.append((os.path.splitext(os.path.basename(path))[0], [], None))
    if subgroup:
        found += [(name + "_sg", defines + ["WG_SUBGROUP=1"], only) for name, defines, only in found]
    if not dtypes:
        if any(only for _, _, only in found):
            sys.exit(f"{path}: a variant names dtypes but the shader has no dtypes line")
        return [(name, defines) for name, defines, _ in found]
    for name, _, only in found:
        if only and set(only) - set(dtypes):
            sys.exit(f"{path}: variant {name} names dtypes outside the dtypes line")
    return [(f"{name}_{dt}", defines + STORAGE_DEFINES[dt]) for name, defines, only in found
            for dt in dtypes if not only or dt in only]


def requirements_of(path):
    """(extensions, target env) a shader declares."""
    extensions, target_env = [], DEFAULT_TARGET_ENV
    with open(path) as f:
        for line in f:
            m = REQUIRES.match(line.strip())
            if m:
                extensions += m.group(1).split()
            m = TARGET_ENV.match(line.strip())
            if m:
                target_env = m.group(1)
    return tuple(extensions), target_env


def params_structs_of(path):
    """[(struct name, [(field, std140 offset)], [(C++ declarations, comment) per source line])] for each
    block `path` marks with `// params-struct: NAME`."""
    structs, lines = [], open(path).read().splitlines()
    i = 0
    while i < len(lines):
        m = PARAMS_STRUCT.match(lines[i].strip())
        i += 1
        if not m:
            continue
        name = m.group(1)
        if i >= len(lines) or not re.search(r"\buniform\b.*\{\s*$", lines[i]):
            sys.exit(f"{path}:{i + 1}: `params-struct: {name}` must precede a line `... uniform Block {{`")
        fields, body, offset = [], [], 0
        i += 1
        while i < len(lines) and not lines[i].strip().startswith("}"):
            code, _, comment = lines[i].partition("//")
            decls = []
            for decl in filter(None, (d.strip() for d in code.split(";"))):
                glsl_type, _, names = decl.partition(" ")
                array = re.fullmatch(r"([A-Za-z_]\w*)\s*(?:\[\s*(\d+)\s*\])?", names.strip())
                if glsl_type == "ivec4" and array:
                    # std140 aligns an ivec4 (or an array of them) to 16 bytes, 16 per element: an
                    # int32_t array of 4 per element, where it starts at a multiple of 16 (C++ would
                    # not pad before it).
                    if offset % 16:
                        sys.exit(f"{path}:{i + 1}: {name} member `{decl}` must start at a multiple of 16 "
                                 f"bytes (it starts at {offset}; std140 would pad before it, C++ not)")
                    field, count = array.group(1), int(array.group(2) or 1)
                    decls.append(f"int32_t {field}[{4 * count}];")
                    fields.append((field, offset))
                    offset += 16 * count
                    continue
                if glsl_type not in PARAMS_SCALARS:
                    sys.exit(f"{path}:{i + 1}: {name} member `{decl}`: only {sorted(PARAMS_SCALARS)} "
                             "members and ivec4 arrays keep the std140 layout equal to the C++ struct's")
                for field in (n.strip() for n in names.split(",")):
                    if not re.fullmatch(r"[A-Za-z_]\w*", field):
                        sys.exit(f"{path}:{i + 1}: {name} member `{field}` is not a plain name")
                    fields.append((field, offset))
                    offset += 4
                decls.append(f"{PARAMS_SCALARS[glsl_type]} {names.strip()};")
            body.append((decls, comment))
            i += 1
        if i == len(lines):
            sys.exit(f"{path}: block {name} has no closing brace")
        structs.append((name, fields, offset, body))
    return structs


def params_header(src_dir):
    """The C++ header of every params-struct block in src_dir's .glsl and .glslh files."""
    out = ["// Generated by glsl/gen_shaders.py from the `params-struct` blocks of glsl/*.glsl[h]. Do not edit.",
           "#pragma once", "#include <cstddef>", "#include <cstdint>", "", "namespace vkd {"]
    seen = set()
    for fname in sorted(os.listdir(src_dir)):
        if not fname.endswith((".glsl", ".glslh")):
            continue
        for name, fields, size, body in params_structs_of(os.path.join(src_dir, fname)):
            if name in seen:
                sys.exit(f"params struct {name} is declared twice")
            seen.add(name)
            out += ["", f"// glsl/{fname}", f"struct {name} {{"]
            for decls, comment in body:
                line = "  " + " ".join(decls) if decls else ""
                if comment:
                    line = (line + "  " if line else "  ") + "//" + comment
                out.append(line)
            out.append("};")
            # std140 puts each 4-byte scalar at the next multiple of 4: the struct may have no padding.
            out.append(f"static_assert(sizeof({name}) == {size}, \"{name}: std140 size\");")
            for field, offset in fields:
                out.append(f"static_assert(offsetof({name}, {field}) == {offset});")
    out += ["", "}  // namespace vkd"]
    return "\n".join(out) + "\n"


_PROBES = {}


def glslc_supports(glslc, extensions, target_env, scratch_dir):
    """Whether this glslc compiles a shader enabling `extensions` for `target_env`."""
    key = (extensions, target_env)
    if key not in _PROBES:
        src = os.path.join(scratch_dir, f"probe_{len(_PROBES)}.comp")
        with open(src, "w") as f:
            f.write("#version 450\n")
            f.writelines(f"#extension {ext} : require\n" for ext in extensions)
            f.write("layout(local_size_x = 1) in;\nvoid main() {}\n")
        r = subprocess.run([glslc, f"--target-env={target_env}", "-o", src + ".spv", src],
                           capture_output=True, text=True)
        _PROBES[key] = r.returncode == 0
    return _PROBES[key]


def compile_variant(glslc, src, include_dir, name, defines, out_dir, target_env=DEFAULT_TARGET_ENV):
    spv = os.path.join(out_dir, name + ".spv")
    cmd = [glslc, "-fshader-stage=compute", f"--target-env={target_env}", "-O",
           "-I", include_dir, "-o", spv, src] + ["-D" + d for d in defines]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"glslc failed on {src} (variant {name}):\n{r.stderr}")
    with open(spv, "rb") as f:
        return name, f.read()


def write_if_changed(path, text):
    """Leaves an unchanged file alone, so its includers are not rebuilt."""
    if os.path.exists(path) and open(path).read() == text:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src-dir", required=True)
    ap.add_argument("--params-header", help="write the C++ parameter structs here (no shaders compiled)")
    ap.add_argument("--table-header", action="append", default=[], metavar="TABLE.py=OUT",
                    help="write a variant table's C++ header (no shaders compiled)")
    ap.add_argument("--glslc")
    ap.add_argument("--out-cpp")
    ap.add_argument("--spv-dir")
    args = ap.parse_args()
    if args.params_header or args.table_header:
        if args.params_header:
            write_if_changed(args.params_header, params_header(args.src_dir))
        for spec in args.table_header:
            table, sep, out = spec.partition("=")
            if not sep:
                ap.error(f"--table-header {spec}: expected TABLE.py=OUT")
            write_if_changed(out, load_table(os.path.join(args.src_dir, table)).cpp_header())
        return
    if not (args.glslc and args.out_cpp and args.spv_dir):
        ap.error("--glslc, --out-cpp and --spv-dir are needed to compile the shaders")
    os.makedirs(args.spv_dir, exist_ok=True)

    jobs, left_out = [], []
    for fname in sorted(os.listdir(args.src_dir)):
        if fname.endswith(".glsl"):
            src = os.path.join(args.src_dir, fname)
            extensions, target_env = requirements_of(src)
            if not glslc_supports(args.glslc, extensions, target_env, args.spv_dir):
                left_out.append(f"{fname} (needs {' '.join(extensions)} for {target_env})")
                continue
            for name, defines in variants_of(src):
                jobs.append((src, name, defines, target_env))
    for note in left_out:
        print(f"gen_shaders: {args.glslc} cannot compile {note}; left out, the runtime falls back",
              file=sys.stderr)
    names = [j[1] for j in jobs]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        sys.exit(f"duplicate shader variant names: {sorted(dupes)}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = [pool.submit(compile_variant, args.glslc, src, args.src_dir, name, defines,
                               args.spv_dir, target_env) for src, name, defines, target_env in jobs]
        try:
            binaries = [f.result() for f in futures]
        except RuntimeError as e:
            sys.exit(str(e))

    out = ["// Generated by glsl/gen_shaders.py. Do not edit.",
           '#include "vk/pipeline.h"', "", "namespace vkd {", "namespace {"]
    for name, code in binaries:
        words = [int.from_bytes(code[i:i + 4], "little") for i in range(0, len(code), 4)]
        body = ",".join(f"0x{w:08x}u" for w in words)
        out.append(f"const uint32_t k_{name}[] = {{{body}}};")
    out.append("}  // namespace")
    out.append("const ShaderBinary kShaderBinaries[] = {")
    for name, code in binaries:
        out.append(f'  {{"{name}", k_{name}, {len(code) // 4}}},')
    out.append("};")
    out.append(f"const size_t kNumShaderBinaries = {len(binaries)};")
    out.append("}  // namespace vkd")
    tmp = args.out_cpp + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, args.out_cpp)


if __name__ == "__main__":
    main()
