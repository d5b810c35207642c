"""The third stage of the flow (measure -> baseline -> verdict -> report): verdicts, the noise-aware
comparison of a measurement with its baseline (``compare``), the same-host judge of base and head rounds
(``samehost``), whether a baseline entry may judge a result at all (``yardstick``), hints for why a layer
got slower (``hints``), the reviewable diff the reports render (``diff``) and the rounds of ``kernelgate
record``/``ab`` (``ab``). Verdicts are enums; nothing here renders text for a report.

It imports ``baseline`` and below; never ``report``, ``coldstart``, ``plugin`` or ``cli``.
"""
