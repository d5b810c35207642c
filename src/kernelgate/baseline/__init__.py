"""kernelgate.baseline.store."""
