"""`vkdelegate_runner` on PATH: runs the C++ runner binary built with the package.

The binary itself needs no Python; this is only the installed command's way to it.
"""
import os
import sys


def main():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vkdelegate_runner")
    if not os.path.exists(binary):
        sys.exit(f"vkdelegate_runner binary not found at {binary}: rebuild vkdelegate")
    os.execv(binary, [binary] + sys.argv[1:])


if __name__ == "__main__":
    main()
