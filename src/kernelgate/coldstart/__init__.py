"""kernelgate.coldstart.phases."""
