"""Run a model with kernel settings forced and see which shaders it ran.

The settings are the graph settings of ``vkdelegate.runtime.settings_table()``
(names without ``VKDELEGATE_``: ``COOPMM_TILE="w"``, ``COOPMAT_EMULATE=True``); they
apply to the program loaded here only, never through the process environment.
"""
import importlib.util
import os
import weakref
from dataclasses import dataclass

import vkdelegate.runtime as rt
from helpers import delegate_blob, delegate_calls, load_method, lower


@dataclass
class KernelRun:
    outputs: list     # the program's outputs (torch tensors)
    shaders: list     # the shaders the program's delegates dispatch, in order
    edge_manager: object
    method: object    # the loaded method, to execute again (other sizes)


_LOWERED = {}                       # lower_once's key -> edge manager
_PTES = weakref.WeakKeyDictionary()  # edge manager -> its .pte, made once


def variant_table(name):
    """glsl/NAME.py (a variant table: the one the shaders' variants, the runtime's tables
    and the settings' accepted values are built from), as a module."""
    path = os.path.join(os.path.dirname(__file__), "..", "glsl", name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lower_once(key, module, inputs, dynamic_shapes=None):
    """`module` lowered once per process per `key`. Kernel settings apply when a program
    loads, not when it lowers, so the tests that force each variant in turn on the same
    case share one lowering (and one .pte) instead of lowering it again per variant."""
    if key not in _LOWERED:
        _LOWERED[key] = lower(module, inputs, dynamic_shapes=dynamic_shapes)
    return _LOWERED[key]


def chosen_shaders(edge_manager, **settings):
    """The shaders the delegate's graph chooses with `settings`, loaded but not run
    (for shapes too large to run on lavapipe)."""
    return rt.Graph(delegate_blob(edge_manager), overrides=settings).shaders()


def run_forcing(module, inputs, *, edge_manager=None, dynamic_shapes=None, **settings):
    """Lowers `module` (unless `edge_manager` is given), loads the program with
    `settings`, runs it on `inputs`. The shaders are those of the very graphs that
    ran (the delegates this load added), not of another load."""
    em = edge_manager if edge_manager is not None else lower(module, inputs, dynamic_shapes=dynamic_shapes)
    if em not in _PTES:
        _PTES[em] = em.to_executorch().buffer
    pte = _PTES[em]
    delegates = len(delegate_calls(em))
    with rt.overrides(**settings):
        method = load_method(pte)
    loaded = rt.loaded_shaders()
    shaders = [s for graph in loaded[len(loaded) - delegates:] for s in graph]
    outputs = method.execute(list(inputs))
    return KernelRun(outputs, shaders, em, method)


def assert_ran(run_or_shaders, *expected):
    """Each of `expected` (shader names) is among the shaders that ran."""
    shaders = run_or_shaders.shaders if isinstance(run_or_shaders, KernelRun) else run_or_shaders
    missing = [s for s in expected if s not in shaders]
    assert not missing, f"expected {missing} among {shaders}"
