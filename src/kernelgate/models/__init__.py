"""kernelgate.models."""
