"""main's performance history, night by night: the store (:mod:`~kernelgate.history.nights`), the
change points in it (:mod:`~kernelgate.history.changes`, Apache Otava's E-Divisive means), the
bisection of a change to its commit (:mod:`~kernelgate.history.bisect`, the same-host A/B of
:mod:`~kernelgate.history.abjudge`), what the nightly publishes (:mod:`~kernelgate.history.publish`)
and the commands (:mod:`~kernelgate.history.command`). docs/history.md describes it."""
