"""kernelgate: a CI performance-regression gate for the CUDA kernels of YOLO models.

Data flow, one module each: profile -> trace -> attribute -> measure -> baseline -> compare -> report.
"""

__version__ = "0.1.0"
