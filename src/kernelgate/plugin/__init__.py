"""kernelgate.plugin.hooks."""
