"""kernelgate.machine."""
