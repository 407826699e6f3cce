"""python3 -m vkdelegate.cli: the same as the `vkdelegate` console script."""
import sys

from vkdelegate.cli.main import main

sys.exit(main())
