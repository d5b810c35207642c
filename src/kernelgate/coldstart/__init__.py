"""Cold starts of a model, each in a fresh process, through the whole flow (measure -> baseline ->
verdict -> report) for the phases of a start: the scenarios (``scenarios``), the phases and their
records (``phases``), the child's own timers (``child``), the runner that spawns the children
(``runner``) and their gate against the baseline (``gate``).

The plugin and the CLI drive it: nothing here imports ``kernelgate.plugin`` or ``kernelgate.cli``
(the layers contract of import-linter in pyproject.toml).
"""
