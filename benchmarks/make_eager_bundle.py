#!/usr/bin/env python3
"""Builds the eager device's GPU bundle (benchmarks/bundle_eager/, git-ignored): what the GPU machine
needs to build vkdelegate.eager against its own Python and torch and time it there.

The GPU machine has another Python (3.12) and torch (2.11, CUDA) than ours, and no executorch, so the
two native modules are compiled there (benchmarks/eager_gpu.sh): vkdelegate.runtime._vkdelegate from
runtime/python/module.cpp and eager/csrc/runtime_table.cpp linked to the runtime core built here
(libvkdelegate_backend.so: Python-independent, the shaders embedded), and vkdelegate.eager._C from
eager/csrc/vulkan_device.cpp against its torch. The bundle carries that library, ExecuTorch's runtime
libraries and headers, pybind11's, flatbuffers' and Vulkan's headers, the generated headers, and the pure-Python
packages our package imports that the machine lacks (executorch's Python parts, torchao, ...).

    python benchmarks/make_eager_bundle.py
    # on the GPU machine (carry .gl2 and benchmarks/bundle_eager):
    bash benchmarks/eager_gpu.sh $OUT
"""
import argparse
import importlib.util
import os
import shutil
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIMIT = 40 * 2**20  # the bundle beside the working tree, .gl2 and the rest under the 64 MiB that travels
# Pure-Python packages `import vkdelegate.eager` and the models need beyond torch (the GPU machine's
# torch brings numpy, sympy, networkx, jinja2). executorch: its Python parts only (no .so).
PACKAGES = ["executorch/exir", "executorch/extension", "executorch/schema", "executorch/devtools",
            "executorch/util", "executorch/export", "executorch/version.py", "torchao", "ruamel", "flatbuffers",
            "tabulate", "tqdm", "colorama", "wcwidth",
            # eager_samples.py reads test_eager.py's tolerances, which imports pytest
            "pytest", "_pytest", "pluggy", "iniconfig", "py.py",
            "gguf"]  # op_samples.py writes GGUF blocks with it
ET_LIBS = ["libexecutorch.so", "libexecutorch_threadpool.so"]


def skip(name):
    return name == "__pycache__" or name.endswith((".so", ".a", ".pyc")) or ".so." in name


def add_tree(tar, src, arcname):
    if os.path.isfile(src):
        tar.add(src, arcname)
        return
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if not skip(d)]
        for fn in filenames:
            if not skip(fn):
                path = os.path.join(dirpath, fn)
                tar.add(path, os.path.join(arcname, os.path.relpath(path, src)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "bundle_eager"))
    args = ap.parse_args()
    site = os.path.dirname(os.path.dirname(importlib.util.find_spec("torch").origin))
    et = os.path.join(site, "executorch")
    pybind = os.path.dirname(importlib.util.find_spec("pybind11").origin)
    build = os.path.join(ROOT, "build")
    backend = [os.path.join(dp, "libvkdelegate_backend.so") for dp, _, fns in os.walk(build)
               if "libvkdelegate_backend.so" in fns and "arm64" not in dp and "sanitize" not in dp]
    generated = os.path.join(build, "cmake", "generated")
    if not backend or not os.path.isdir(generated):
        sys.exit("no build here: run `python3 setup.py build_ext --inplace` first")
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(os.path.join(args.out, "lib"))
    shutil.copy2(max(backend, key=os.path.getmtime), os.path.join(args.out, "lib"))
    for lib in ET_LIBS:
        shutil.copy2(os.path.join(et, "lib", lib), os.path.join(args.out, "lib"))
    with tarfile.open(os.path.join(args.out, "tree.tar.xz"), "w:xz") as tar:
        for pkg in PACKAGES:
            add_tree(tar, os.path.join(site, pkg), os.path.join("site", pkg))
        add_tree(tar, os.path.join(et, "include"), "include/et")
        add_tree(tar, os.path.join(pybind, "include"), "include/pybind11_root")
        add_tree(tar, "/usr/include/flatbuffers", "include/fb/flatbuffers")
        add_tree(tar, "/usr/include/vulkan", "include/fb/vulkan")  # Debian's libvulkan-dev headers
        add_tree(tar, "/usr/include/vk_video", "include/fb/vk_video")
        for fn in os.listdir(generated):
            if fn.endswith(".h"):
                tar.add(os.path.join(generated, fn), os.path.join("include", "generated", fn))
    with tarfile.open(os.path.join(args.out, "lib.tar.xz"), "w:xz") as tar:
        for fn in os.listdir(os.path.join(args.out, "lib")):
            tar.add(os.path.join(args.out, "lib", fn), os.path.join("lib", fn))
    shutil.rmtree(os.path.join(args.out, "lib"))
    size = sum(os.path.getsize(os.path.join(args.out, fn)) for fn in os.listdir(args.out))
    print(f"bundle: {args.out}, {size / 2**20:.1f} MiB")
    if size > LIMIT:
        sys.exit(f"the bundle is {size / 2**20:.1f} MiB, over {LIMIT / 2**20:.0f}")
    print('carry: [".gl2", "benchmarks/bundle_eager"]   command: bash benchmarks/eager_gpu.sh $OUT')


if __name__ == "__main__":
    main()
