"""kernelgate.measure.results."""
