"""The `vkdelegate` command: devices, ops, export, info, run, bench, debug (cli/main.py)."""
