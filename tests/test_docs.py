import os

from vkdelegate.docs.__main__ import CSV_NAME, DOCS_DIR, op_support_csv


def test_committed_op_table_is_generated_from_the_registry():
    with open(os.path.join(DOCS_DIR, CSV_NAME)) as f:
        committed = f.read()
    assert committed == op_support_csv(), "run `python -m vkdelegate.docs` and commit docs/"
