"""The sanitizer stage of the suite (scripts/test.sh runs it after `pytest tests`, from the
blobs that run left in VKDELEGATE_FUZZ_SEEDS): the libFuzzer target on the blob loader for a
bounded time, and the runtime built with AddressSanitizer + UndefinedBehaviorSanitizer
(scripts/setup.sh --tests builds both in build/sanitize) running the example programs, every
seed and regression blob, and a few runtime test files. Any sanitizer report, crash or
unexpected exception fails it. Not named test_*.py: `pytest tests` leaves it out, since its
seeds come from that run."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("VKDELEGATE_SANITIZE_BUILD_DIR", ROOT / "build" / "sanitize"))
OUT = BUILD / "out"
SEEDS = Path(os.environ["VKDELEGATE_FUZZ_SEEDS"]) if os.environ.get("VKDELEGATE_FUZZ_SEEDS") else None
REGRESSIONS = ROOT / "tests" / "regressions"
SUPPRESSIONS = ROOT / "tests" / "lsan_suppressions.txt"
# The fuzz run. In CI it is the same run every time (a fixed seed and number of inputs,
# from the suite's blobs, which are the same every time, and an empty corpus), so a
# failure reproduces; VKDELEGATE_FUZZ_SEED=0 explores (a random seed, the corpus kept in
# build/sanitize/corpus across runs). The time cap keeps a slow machine within 2 minutes.
FUZZ_SEED = int(os.environ.get("VKDELEGATE_FUZZ_SEED", "1"))
FUZZ_RUNS = int(os.environ.get("VKDELEGATE_FUZZ_RUNS", "100000"))
FUZZ_SECONDS = int(os.environ.get("VKDELEGATE_FUZZ_SECONDS", "100"))
# The runtime test files run on the ASan-built Python module.
ASAN_TEST_FILES = ["tests/test_runtime.py", "tests/test_bad_input.py"]

if __name__ == "__main__":
    # python3 tests/sanitizers.py CRASH OUT.vkdb: a fuzzer's input as a regression file. The
    # fuzz target fixes the checksum of each input it runs, the file keeps the unmutated one.
    from vkdelegate.serialization.blob import with_checksum

    Path(sys.argv[2]).write_bytes(with_checksum(Path(sys.argv[1]).read_bytes()))
    sys.exit(0)

if not (OUT / "vkdelegate_fuzz_blob").exists():
    pytest.skip(f"no sanitizer build in {BUILD}: run scripts/setup.sh --tests "
                "(or scripts/build_sanitizers.sh)", allow_module_level=True)


def sanitizer_env(**extra) -> dict:
    env = dict(os.environ)
    # The validation layer's cost would dominate the runs; the suite runs with it on.
    env["VKDELEGATE_VALIDATION"] = "0"
    # allocator_may_return_null: a blob asking for more memory than there is must get
    # our error (the driver's allocation fails), not an ASan abort.
    env["ASAN_OPTIONS"] = "detect_leaks=1:allocator_may_return_null=1:symbolize=1"
    env["LSAN_OPTIONS"] = f"suppressions={SUPPRESSIONS}:print_suppressions=0"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    env.update(extra)
    return env


def seed_files(kind: str) -> list:
    """DIR/blobs or DIR/pte of VKDELEGATE_FUZZ_SEEDS; fails when the suite left none."""
    if SEEDS is None:
        pytest.skip("VKDELEGATE_FUZZ_SEEDS is not set: scripts/test.sh sets it for `pytest tests`")
    files = sorted((SEEDS / kind).glob("*"))
    assert files, f"the test suite left no {kind} in {SEEDS}"
    return files


def report(r: subprocess.CompletedProcess) -> str:
    return f"exit {r.returncode}\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"


def test_fuzz_blob_loader(tmp_path):
    """libFuzzer from the suite's blobs and the regression files; a crasher lands in
    build/sanitize/crashes/ (add it to tests/regressions/ as NAME.vkdb once the bug is fixed)."""
    seeds = seed_files("blobs")
    corpus = BUILD / "corpus" if FUZZ_SEED == 0 else tmp_path / "corpus"
    crashes = BUILD / "crashes"
    corpus.mkdir(exist_ok=True)
    crashes.mkdir(exist_ok=True)
    r = subprocess.run(
        [str(OUT / "vkdelegate_fuzz_blob"), f"-seed={FUZZ_SEED}", f"-runs={FUZZ_RUNS}",
         f"-max_total_time={FUZZ_SECONDS}", "-timeout=30",
         "-rss_limit_mb=6144", f"-artifact_prefix={crashes}/", "-print_final_stats=1",
         str(corpus), str(seeds[0].parent), str(REGRESSIONS)],
        capture_output=True, text=True, env=sanitizer_env(), timeout=FUZZ_SECONDS + 600)
    assert r.returncode == 0, report(r)
    runs = [line for line in r.stderr.splitlines() if line.startswith("stat::number_of_executed_units")]
    print(runs, f"{len(seeds)} seeds")


def run_blobs(paths) -> subprocess.CompletedProcess:
    args = [str(OUT / "vkdelegate_runner"), "--iters", "1", "--warmup", "0"]
    for p in paths:
        args += ["--blob", str(p)]
    return subprocess.run(args, capture_output=True, text=True, env=sanitizer_env(), timeout=900)


def test_asan_runner_runs_every_seed():
    seeds = seed_files("blobs")
    r = run_blobs(seeds)
    assert r.returncode == 0, report(r)
    # Each loads and runs; the GPU checks may stop made-up inputs (zero integer divisors).
    assert r.stdout.count(": ran (") + r.stdout.count(": ran, faulted on made-up inputs: ") == len(seeds), report(r)


def test_asan_runner_rejects_or_runs_every_regression_blob():
    """Each regression blob made the loader crash once: now it is an error, or it runs."""
    blobs = sorted(REGRESSIONS.glob("*"))
    r = run_blobs(blobs)
    lines = [line for line in r.stdout.splitlines() if line.startswith("blob ")]
    assert r.returncode in (0, 1) and len(lines) == len(blobs), report(r)
    assert "ERROR: AddressSanitizer" not in r.stderr and "runtime error:" not in r.stderr, report(r)


def test_asan_runner_runs_the_example_programs():
    for pte in seed_files("pte"):
        r = subprocess.run([str(OUT / "vkdelegate_runner"), "--model", str(pte), "--iters", "1", "--warmup", "0"],
                           capture_output=True, text=True, env=sanitizer_env(), timeout=900)
        assert r.returncode == 0, f"{pte.name}: {report(r)}"


def asan_package(tmp: Path) -> Path:
    """A `vkdelegate` package of links to this checkout whose runtime/ holds the ASan-built
    module instead of the normal one; returns the directory to put on PYTHONPATH."""
    pkg = tmp / "vkdelegate"
    (pkg / "runtime").mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name not in ("runtime", "build") and not entry.name.startswith("."):
            (pkg / entry.name).symlink_to(entry)
    for entry in (ROOT / "runtime").iterdir():
        if not entry.name.startswith("_vkdelegate") and entry.name != "vkdelegate_runner":
            (pkg / "runtime" / entry.name).symlink_to(entry)
    for built in OUT.glob("_vkdelegate*.so"):
        (pkg / "runtime" / built.name).symlink_to(built)
    return tmp


def test_runtime_tests_on_the_asan_module(tmp_path):
    asan_runtime = subprocess.run(["clang++-14", "-print-file-name=libclang_rt.asan-x86_64.so"],
                                  capture_output=True, text=True, check=True).stdout.strip()
    env = sanitizer_env(
        LD_PRELOAD=asan_runtime, PYTHONPATH=str(asan_package(tmp_path)),
        # Python and the libraries it loads are not built for LeakSanitizer: it would
        # report what they keep until exit.
        ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:symbolize=1")
    env["VKDELEGATE_VALIDATION"] = "1"  # as the suite runs them
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                        "-o", "addopts=", *ASAN_TEST_FILES],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, report(r)
    imported = subprocess.run(
        [sys.executable, "-c", "import os, vkdelegate.runtime as rt; print(os.path.realpath(rt._vkdelegate.__file__))"],
        capture_output=True, text=True, env=env).stdout.strip()
    assert Path(imported).parent == OUT.resolve(), f"the tests imported {imported}, not the ASan module"
