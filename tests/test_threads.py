"""One graph used from several threads: the threads take turns, nothing hangs, every output is right."""
import threading

import numpy as np
import torch

import vkdelegate.runtime as rt
from helpers import delegate_blob, lower

THREADS, EXECUTES = 4, 200


def _graph(module, example):
    return rt.Graph(delegate_blob(lower(module.eval(), (example,))))


def test_threads_share_graphs():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    scale = torch.nn.Sequential(torch.nn.Linear(7, 7), torch.nn.Sigmoid())
    graphs = [(_graph(mlp, torch.randn(2, 7)), mlp), (_graph(scale, torch.randn(2, 7)), scale)]
    failures, done = [], []

    def work(t):
        rng = np.random.default_rng(t)
        try:
            for i in range(EXECUTES):
                graph, module = graphs[(t + i) % 2]
                x = rng.standard_normal((2, 7), dtype=np.float32)
                (out,) = graph.run([x])
                with torch.no_grad():
                    want = module(torch.from_numpy(x)).numpy()
                if not np.allclose(out, want, atol=1e-5, rtol=1e-4):
                    failures.append((t, i, float(np.abs(out - want).max())))
            done.append(t)
        except Exception as e:  # reported below, with the thread
            failures.append((t, repr(e)))

    threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads), "threads sharing a graph hung"
    assert not failures, failures[:5]
    assert sorted(done) == list(range(THREADS))


def test_reports_while_another_thread_runs():
    """The graph's reports (timings, shaders, memory) take the same turns as run()."""
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU())
    g = _graph(m, torch.randn(3, 8))
    g.set_profiling(True)
    stop = threading.Event()
    errors = []

    def runner():
        x = np.ones((3, 8), np.float32)
        try:
            while not stop.is_set():
                g.run([x])
        except Exception as e:
            errors.append(repr(e))

    th = threading.Thread(target=runner, daemon=True)
    th.start()
    try:
        for _ in range(50):
            assert g.shaders()
            g.memory_report()
            g.timings()
            g.barrier_stats()
    finally:
        stop.set()
        th.join(timeout=60)
    assert not th.is_alive(), "a report call and run() deadlocked"
    assert not errors, errors


def test_load_in_threads():
    """Loading releases the GIL; graphs loaded at the same time all work."""
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    blob = delegate_blob(lower(m.eval(), (torch.randn(1, 4),)))
    n, graphs, errors = 2, [], []

    def load():
        try:
            graphs.append(rt.Graph(blob))
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=load, daemon=True) for _ in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert not errors and len(graphs) == n, errors
    x = np.full((1, 4), 0.5, np.float32)
    want = m(torch.from_numpy(x)).detach().numpy()
    for g in graphs:
        np.testing.assert_allclose(g.run([x])[0], want, atol=1e-5)
