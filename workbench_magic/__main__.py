"""`python -m workbench_magic ...` is the `workbench-magic` command."""

import sys

from workbench_magic.cli import main

sys.exit(main())
