"""kernelgate.report.terminal."""
