#!/usr/bin/env bash
# The test suite, as CI runs it (README: bash scripts/setup.sh --tests && bash scripts/test.sh):
#  1. pytest tests: every test file; the registry batches and example models leave their
#     delegate blobs and programs in build/fuzz-seeds as they go (VKDELEGATE_FUZZ_SEEDS);
#  2. pytest tests/sanitizers.py: the blob fuzzer from those seeds (bounded) and the
#     ASan+UBSan runtime on them, on tests/regressions and on a few runtime test files
#     (scripts/setup.sh --tests built them; without that build it skips, saying so).
# Arguments go to the first run (e.g. -x). Both stages run; either failing fails.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
export VKDELEGATE_FUZZ_SEEDS="$PWD/build/fuzz-seeds"
rm -rf "$VKDELEGATE_FUZZ_SEEDS"
SECONDS=0
"$PYTHON" -m pytest tests "$@"; suite=$?
suite_s=$SECONDS
"$PYTHON" -m pytest tests/sanitizers.py -p no:cacheprovider --durations=0; sanitizers=$?
echo "[test] suite ${suite_s}s (exit $suite), sanitizer stage $((SECONDS - suite_s))s (exit $sanitizers)"
[ "$suite" -eq 0 ] && [ "$sanitizers" -eq 0 ]
