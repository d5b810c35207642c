"""The last stage of the flow (measure -> baseline -> verdict -> report): rendering for people and tools:
the terminal (``terminal``), the PR comment (``markdown``), HTML with plots (``html``, ``plots``,
``templates/``), JSON (``json``, ``data``), reports merged from several runners (``merge``), the report
folder (``publish``), redaction (``redact``), trace excerpts (``trace_store``) and tables of layer groups
(``groups``).

It renders what ``verdict`` decided and never decides itself; it does not import ``coldstart``,
``plugin`` or ``cli``.
"""
