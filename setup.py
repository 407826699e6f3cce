"""vkdelegate: an ExecuTorch delegate that runs PyTorch models on GPUs via Vulkan.

`pip install .` (or `pip install -e .`) builds the Vulkan runtime with CMake:
shaders with glslc, the Python module that registers the backend, and the
vkdelegate_runner binary. The repository root is the `vkdelegate` package.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def executorch_cmake_dir():
    """share/cmake of the executorch wheel; found even from pip's isolated build env."""
    if os.environ.get("VKDELEGATE_EXECUTORCH_DIR"):
        return os.environ["VKDELEGATE_EXECUTORCH_DIR"]
    code = "import importlib.util, os; s = importlib.util.find_spec('executorch'); " \
           "print(os.path.join(list(s.submodule_search_locations)[0], 'share', 'cmake'))"
    # An isolated build hides the target environment's site-packages through
    # PYTHONPATH/PYTHONNOUSERSITE; ask a clean interpreter as well.
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    for env in (os.environ, clean_env):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        if r.returncode == 0 and Path(r.stdout.strip(), "executorch-config.cmake").exists():
            return r.stdout.strip()
    sys.exit("vkdelegate: the executorch==1.5.1 wheel must be installed before building "
             "(pip install torch==2.13.0 executorch==1.5.1), or set VKDELEGATE_EXECUTORCH_DIR")


def cmake_binary():
    try:
        import cmake  # the PyPI cmake package (>= 3.28); Debian 12's is too old
        return str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
    except ImportError:
        return shutil.which("cmake") or "cmake"


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import pybind11

        out_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build_dir = Path(os.environ.get("VKDELEGATE_BUILD_DIR", ROOT / "build" / "cmake"))
        build_dir.mkdir(parents=True, exist_ok=True)
        args = [
            f"-DCMAKE_BUILD_TYPE={os.environ.get('VKDELEGATE_BUILD_TYPE', 'Release')}",
            f"-Dexecutorch_DIR={executorch_cmake_dir()}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DVKDELEGATE_OUTPUT_DIR={out_dir}",
        ]
        # The glslc scripts/fetch_glslc.sh left in .glslc/ (it compiles the
        # cooperative-matrix and integer-dot shaders), unless VKDELEGATE_GLSLC names one.
        # The eager device (vkdelegate.eager._C) builds against the torch installed here.
        try:
            import torch.utils
            args.append(f"-DVKDELEGATE_TORCH_DIR={torch.utils.cmake_prefix_path}")
        except ImportError:
            print("vkdelegate: torch is not installed: building without the eager device")
        glslc = os.environ.get("VKDELEGATE_GLSLC")
        if not glslc and os.access(ROOT / ".glslc" / "glslc", os.X_OK):
            glslc = str(ROOT / ".glslc" / "glslc")
        if glslc:
            args.append(f"-DVKDELEGATE_GLSLC={glslc}")
        if shutil.which("ninja"):
            args.append("-GNinja")
        cmake = cmake_binary()
        subprocess.check_call([cmake, "-S", str(ROOT), "-B", str(build_dir)] + args)
        subprocess.check_call([cmake, "--build", str(build_dir), "-j", str(os.cpu_count() or 2)])

    def copy_extensions_to_source(self):
        # Both `build_ext --inplace` and an editable install build into build_lib and
        # then copy the extension module into the source tree here (setuptools clears
        # `inplace` while building); the runner binary must land beside the module.
        super().copy_extensions_to_source()
        built = Path(self.build_lib, "vkdelegate", "runtime", "vkdelegate_runner")
        shutil.copy2(built, ROOT / "runtime" / "vkdelegate_runner")
        # The eager device's torch extension, built beside the module (CMakeLists.txt).
        for eager_module in Path(self.build_lib, "vkdelegate", "eager").glob("_C.*.so"):
            shutil.copy2(eager_module, ROOT / "eager" / eager_module.name)


PACKAGES = ["vkdelegate"] + [
    "vkdelegate." + p for p in (
        "backends", "partitioner", "serialization", "serialization.generated",
        "serialization.generated.vkdelegate", "serialization.generated.vkdelegate.fb",
        "runtime", "examples", "examples.models", "docs", "quant", "cli", "eager")
]

setup(
    name="vkdelegate",
    version="0.1.0",
    description="ExecuTorch delegate running PyTorch models on any GPU through Vulkan compute",
    python_requires=">=3.10",
    packages=PACKAGES,
    package_dir={"vkdelegate": "."},
    package_data={"vkdelegate.runtime": ["vkdelegate_runner"], "vkdelegate.serialization": ["schema.fbs"]},
    # tqdm: the `vkdelegate` command's progress bars.
    install_requires=["executorch==1.5.1", "flatbuffers", "numpy", "tqdm"],
    # GGUF: vkdelegate.gguf reads .gguf files with the gguf package. chart: `vkdelegate bench
    # --chart out.png` draws with matplotlib (scripts/setup.sh installs it; .html needs nothing).
    extras_require={"gguf": ["gguf>=0.10"], "chart": ["matplotlib"]},
    ext_modules=[CMakeExtension("vkdelegate.runtime._vkdelegate")],
    cmdclass={"build_ext": CMakeBuild},
    entry_points={"console_scripts": ["vkdelegate_runner=vkdelegate.runtime.runner:main",
                                      "vkdelegate=vkdelegate.cli.main:main"]},
    zip_safe=False,
)
