"""What several commands share: errors, model factories, input specs, loading a .pte."""
import importlib
import os
import re
from typing import Any, List, Optional, Sequence, Tuple


class CliError(Exception):
    """A user's mistake or an unusable file: main prints the message as one line, no traceback."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


# ExecuTorch's ScalarType codes (those of c10), as MethodMeta's TensorInfo.dtype() gives them.
_SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
                 7: "float64", 11: "bool", 15: "bfloat16"}
_DTYPE_NAMES = {"f32": "float32", "float": "float32", "f16": "float16", "half": "float16", "fp16": "float16",
                "fp32": "float32", "long": "int64", "int": "int32", "i32": "int32", "i64": "int64",
                "bf16": "bfloat16"}


def torch_dtype(name: str):
    import torch

    name = _DTYPE_NAMES.get(name, name)
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise CliError(f"unknown dtype '{name}' (float32, float16, int64, int32, bool, ...)")
    return dtype


def scalar_type_dtype(code: int):
    if code not in _SCALAR_TYPES:
        raise CliError(f"the program has an input of ExecuTorch scalar type {code}, which this tool cannot make")
    return torch_dtype(_SCALAR_TYPES[code])


# --- model factories: MODULE:NAME --------------------------------------------------------------

def load_factory(spec: str):
    """(model, example inputs or None) from MODULE:NAME.

    NAME is a dotted path inside the module; a step into a dict takes its key
    (vkdelegate.examples.models:MODELS.mlp). What it names is called without arguments when it is
    callable and not already a module; the result is a torch.nn.Module or a (module, inputs) pair.
    A module without inputs uses its example_inputs() where it has one.
    """
    import torch

    if ":" not in spec:
        raise CliError(f"'{spec}': expected MODULE:FACTORY (e.g. vkdelegate.examples.models:MODELS.mlp)")
    module_name, path = spec.split(":", 1)
    try:
        obj = importlib.import_module(module_name)
    except ImportError as e:
        raise CliError(f"cannot import module '{module_name}': {e}") from e
    except Exception as e:
        raise CliError(f"importing module '{module_name}' failed: {type(e).__name__}: {e}") from e
    for part in path.split("."):
        if isinstance(obj, dict):
            if part not in obj:
                raise CliError(f"'{spec}': no key '{part}' (keys: {', '.join(map(str, obj))})")
            obj = obj[part]
        elif hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            raise CliError(f"'{spec}': {module_name} has no '{part}'")
    if callable(obj) and not isinstance(obj, torch.nn.Module):
        try:
            obj = obj()
        except Exception as e:
            raise CliError(f"calling {path}() failed: {type(e).__name__}: {e}") from e
    inputs = None
    if isinstance(obj, (tuple, list)) and len(obj) == 2 and isinstance(obj[0], torch.nn.Module):
        obj, inputs = obj
        inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if not isinstance(obj, torch.nn.Module):
        raise CliError(f"'{spec}' gives a {type(obj).__name__}, not a torch.nn.Module or a (module, inputs) pair")
    if inputs is None and callable(getattr(obj, "example_inputs", None)):
        inputs = tuple(obj.example_inputs())
    return obj.eval(), inputs


# --- inputs --------------------------------------------------------------------------------------

_SHAPE = re.compile(r"^(\d+(?:x\d+)*|scalar)(?::(\w+))?$")


def parse_input_specs(specs: Sequence[str]) -> Optional[Tuple[Any, ...]]:
    """Inputs from --inputs: one file.pt (a tensor or a tuple/list of them), or shapes such as
    8x64 or 1x16:int64 (random values; integers in [0, 10)), one per input. None for 'random'."""
    import torch

    if not specs or list(specs) == ["random"]:
        return None
    if len(specs) == 1 and specs[0].endswith((".pt", ".pth")):
        return load_input_file(specs[0])
    tensors = []
    for spec in specs:
        m = _SHAPE.match(spec)
        if not m:
            raise CliError(f"--inputs '{spec}': expected 'random', a file.pt, or shapes like 8x64 or 1x16:int64")
        sizes = [] if m.group(1) == "scalar" else [int(s) for s in m.group(1).split("x")]
        tensors.append(random_tensor(sizes, torch_dtype(m.group(2) or "float32")))
    return tuple(tensors)


def load_input_file(path: str):
    import torch

    if not os.path.exists(path):
        raise CliError(f"no such input file: {path}")
    try:
        data = torch.load(path, weights_only=True)
    except Exception as e:
        raise CliError(f"{path}: not a torch.save file of tensors: {type(e).__name__}: {e}") from e
    if isinstance(data, torch.Tensor):
        return (data,)
    if isinstance(data, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in data):
        return tuple(data)
    raise CliError(f"{path}: expected a tensor or a tuple/list of tensors, got {type(data).__name__}")


def random_tensor(sizes, dtype):
    import torch

    gen = torch.Generator().manual_seed(0)
    if dtype.is_floating_point:
        return torch.randn(sizes, generator=gen).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, sizes, generator=gen).bool()
    return torch.randint(0, 10, sizes, generator=gen).to(dtype)


def describe(t) -> str:
    return f"{str(t.dtype).replace('torch.', '')}{list(t.shape)}"


# --- .pte files ----------------------------------------------------------------------------------

def read_pte(path: str) -> Tuple[bytes, list]:
    """The file's bytes and its vkdelegate blobs; a clear error for a missing or unreadable file."""
    if not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    if os.path.isdir(path):
        raise CliError(f"{path} is a directory, not a .pte file")
    from vkdelegate.serialization import delegate_blobs
    with open(path, "rb") as f:
        data = f.read()
    try:
        blobs = delegate_blobs(data)
    except ValueError as e:
        raise CliError(f"{path}: {e}") from e
    return data, blobs


def require_device(blobs: list) -> None:
    import vkdelegate.runtime as rt

    if blobs and not rt.is_available():
        raise CliError(f"no usable Vulkan device: {rt.unavailable_reason()}")


class LoadedProgram:
    """A .pte loaded through ExecuTorch's runtime, as a user runs it."""

    def __init__(self, path: str, method_name: str = "forward"):
        self.path = path
        self.data, self.blobs = read_pte(path)
        require_device(self.blobs)
        import vkdelegate.runtime  # noqa: F401  registers the backend
        from executorch.runtime import Runtime

        try:
            self.program = Runtime.get().load_program(self.data)
        except Exception as e:
            raise CliError(f"{path}: ExecuTorch cannot load the program: {e}") from e
        names = list(self.program.method_names)
        if method_name not in names:
            raise CliError(f"{path}: no method '{method_name}' (methods: {', '.join(names)})")
        import vkdelegate.runtime as rt

        # The delegates this load adds to the process's live graphs (in load order): theirs
        # alone are profiled where other programs are loaded too (tests call main() in-process).
        before = len(rt.loaded_execute_stats())
        try:
            self.method = self.program.load_method(method_name)
        except Exception as e:
            raise CliError(f"{path}: loading method '{method_name}' failed: {_last_error(e)}") from e
        self.graphs = range(before, len(rt.loaded_execute_stats()))
        self.meta = self.method.metadata

    def input_specs(self) -> List[Tuple[List[int], Any]]:
        specs = []
        for i in range(self.meta.num_inputs()):
            info = self.meta.input_tensor_meta(i)
            specs.append((list(info.sizes()), scalar_type_dtype(int(info.dtype()))))
        return specs

    def inputs(self, given: Optional[Tuple[Any, ...]]):
        """The given inputs checked against the program's (rank and dtype), or random ones of its shapes."""
        specs = self.input_specs()
        if given is None:
            return tuple(random_tensor(sizes, dtype) for sizes, dtype in specs)
        if len(given) != len(specs):
            raise CliError(f"the program takes {len(specs)} input(s), {len(given)} given")
        for i, (t, (sizes, dtype)) in enumerate(zip(given, specs)):
            if t.dtype != dtype or t.dim() != len(sizes):
                raise CliError(f"input {i} is {describe(t)}; the program expects "
                               f"{str(dtype).replace('torch.', '')}{sizes}")
        return tuple(t.contiguous() for t in given)

    def execute(self, inputs):
        try:
            return self.method.execute(list(inputs))
        except Exception as e:
            expected = ", ".join(f"{str(d).replace('torch.', '')}{s}" for s, d in self.input_specs())
            got = ", ".join(describe(t) for t in inputs)
            if "set_inputs" in str(e):
                raise CliError(f"the program does not take inputs {got}: it expects {expected} "
                               "(upper bounds where its shapes are dynamic)") from e
            raise CliError(f"execute failed: {_last_error(e)}") from e


def _last_error(e: Exception) -> str:
    import vkdelegate.runtime as rt

    backend = rt.last_error()
    return f"{e}; vkdelegate: {backend}" if backend else str(e)
