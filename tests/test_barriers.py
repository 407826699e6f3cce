"""Dependency-aware barriers (issue 6): a compute barrier goes only between
dispatches that touch the same bytes of a buffer with at least one write, and
independent dispatches are grouped between barriers. Every test runs under
Khronos synchronization validation (conftest), so a missing barrier fails it;
test_dropping_barriers_is_caught proves that check is live."""
import pytest
import torch

import vkdelegate.runtime as rt
from helpers import TOLERANCES, lower
from helpers import delegate_blob
from vkdelegate.examples.models.transformer import TransformerBlock


class Branches(torch.nn.Module):
    """Three independent unary branches of one input (graph outputs, so memory
    planning gives each its own buffer), and a sum of two of them."""

    def forward(self, x):
        a, b, c = torch.relu(x), torch.sigmoid(x), torch.tanh(x)
        return a, b, c, a + b


class Inception(torch.nn.Module):
    """Inception-like: parallel conv/pool branches of one input, concatenated, and a
    view (reshape) on one branch, so branches alias storage through views."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.b1 = torch.nn.Conv2d(4, 3, 1)
        self.b3 = torch.nn.Conv2d(4, 5, 3, padding=1)
        self.b5 = torch.nn.Conv2d(4, 2, 5, padding=2)

    def forward(self, x):
        pooled = torch.nn.functional.max_pool2d(x, 3, stride=1, padding=1)
        b1 = torch.relu(self.b1(x)).reshape(x.shape[0], 3, -1).reshape(x.shape[0], 3, 7, 7)
        return torch.cat([b1, self.b3(x), self.b5(x), pooled], dim=1)


def graph_of(module, inputs, settings=None, **kw):
    return rt.Graph(delegate_blob(lower(module, inputs, **kw)), overrides=settings)


def check_branches(outs, x):
    for out, ref in zip(outs, Branches()(x)):
        torch.testing.assert_close(out, ref, **TOLERANCES["transcendental"])


def run(graph, inputs):
    return [torch.from_numpy(o) for o in graph.run([i.numpy() for i in inputs])]


def test_independent_branches_share_one_batch():
    x = torch.randn(2, 33) * 4
    g = graph_of(Branches(), (x,))
    check_branches(run(g, (x,)), x)
    # relu, sigmoid, tanh together, then the add.
    assert g.barrier_stats() == (4, 1)


def test_executes_back_to_back_without_a_barrier_before_the_first_command():
    """No barrier opens an execute (the host waits for each submit's fence, and the next submit's own
    memory dependency makes the last execute's writes visible): replays whose first dispatches overwrite
    what the last ones read give eager's results with no synchronization validation message (the resized
    replays of test_transformer_block_dynamic_shapes_rerecord too)."""
    before = rt.validation_error_count()
    x = torch.randn(2, 33)
    g = graph_of(Branches(), (x,))
    for k in range(3):
        xk = x * (k + 1)
        check_branches(run(g, (xk,)), xk)
    assert rt.validation_error_count() == before


def test_all_barriers_restores_one_barrier_per_dispatch():
    x = torch.randn(2, 33)
    g = graph_of(Branches(), (x,), {"ALL_BARRIERS": True})
    check_branches(run(g, (x,)), x)
    assert g.barrier_stats() == (4, 3)


@pytest.mark.parametrize("reorder", [True, False])
def test_inception_branches_and_views(reorder):
    m, x = Inception().eval(), torch.randn(2, 4, 7, 7)
    g = graph_of(m, (x,), {"NO_REORDER": not reorder})
    for _ in range(2):  # a replay orders after the previous execute too
        (out,) = run(g, (x,))
        torch.testing.assert_close(out, m(x), **TOLERANCES["matmul"])
    dispatches, barriers = g.barrier_stats()
    assert barriers < dispatches - 1


def test_transformer_block_dynamic_shapes_rerecord():
    """q/k/v and the residual branch, resized: every re-record is checked too."""
    model = TransformerBlock(dim=32, heads=2).eval()
    seq = torch.export.Dim("seq", min=1, max=24)
    g = graph_of(model, (torch.randn(2, 16, 32),), options={"require_dynamic_shapes": True},
                 dynamic_shapes=({1: seq},))
    for n in (16, 1, 13, 24):
        x = torch.randn(2, n, 32)
        (out,) = run(g, (x,))
        torch.testing.assert_close(out, model(x), **TOLERANCES["model"])
    dispatches, barriers = g.barrier_stats()
    assert barriers < dispatches - 1


def test_profiling_keeps_a_barrier_per_dispatch():
    x = torch.randn(2, 33)
    g = graph_of(Branches(), (x,))
    run(g, (x,))
    assert g.barrier_stats() == (4, 1)
    g.set_profiling(True)
    check_branches(run(g, (x,)), x)
    assert g.barrier_stats() == (4, 3)
    assert len(g.timings()) == 4


@pytest.mark.provokes_validation_errors
def test_dropping_barriers_is_caught():
    """NO_BARRIERS records no barrier between dispatches: the
    synchronization validation must report the hazards (else its check is dead)."""
    if not rt.validation_enabled():
        pytest.skip("the Khronos validation layer is not enabled")
    x = torch.randn(2, 33)
    g = graph_of(Branches(), (x,), {"NO_BARRIERS": True})
    before = rt.validation_error_count()
    run(g, (x,))
    assert g.barrier_stats() == (4, 0)
    assert rt.validation_error_count() > before, "sync validation missed a dropped barrier"
