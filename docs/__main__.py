"""python -m vkdelegate.docs: writes docs/vulkan-op-support.csv and
docs/op-support.rst from op_registry.py (the committed files must match)."""
import csv
import io
import os

from vkdelegate.op_registry import REGISTRY

DOCS_DIR = os.path.dirname(os.path.abspath(__file__))
CSV_NAME = "vulkan-op-support.csv"

RST = """\
================
Operator Support
================

The operators vkdelegate runs on the GPU, generated from ``op_registry.py`` (the source of
truth that the partitioner consults). Operators not listed stay on ExecuTorch's CPU kernels.
All operators support dynamic shapes (resizing) unless the notes say "no resize".

.. csv-table:: vkdelegate operator support
   :file: {csv}
   :header-rows: 1
   :widths: 20 35 45
   :align: left
"""


def dtype_names(entry) -> str:
    return ", ".join(sorted(str(d).replace("torch.", "") for d in entry.dtypes))


def entry_notes(entry) -> str:
    """An entry's Notes column (also `vkdelegate ops`)."""
    notes = f"{entry.notes} dtypes: {dtype_names(entry)}."
    if not entry.supports_resize:
        notes += " No resize."
    return notes


def op_support_rows():
    """(namespace, operator, notes) of every op the registry covers, sorted."""
    rows = []
    for entry in REGISTRY:
        for name in entry.op_names:
            namespace, op = name.split(".", 1)
            rows.append((namespace, op, entry_notes(entry)))
    return sorted(rows)


def op_support_csv() -> str:
    rows = op_support_rows()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("Namespace", "Operator", "Notes"))
    writer.writerows(rows)
    return out.getvalue()


def main():
    with open(os.path.join(DOCS_DIR, CSV_NAME), "w") as f:
        f.write(op_support_csv())
    with open(os.path.join(DOCS_DIR, "op-support.rst"), "w") as f:
        f.write(RST.format(csv=CSV_NAME))
    print(f"wrote {os.path.join(DOCS_DIR, CSV_NAME)}")


if __name__ == "__main__":
    main()
