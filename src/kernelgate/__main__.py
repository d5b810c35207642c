"""``python -m kernelgate``: the same as the ``kernelgate`` command."""

from kernelgate.cli import main

raise SystemExit(main())
