"""kernelgate.verdict."""
