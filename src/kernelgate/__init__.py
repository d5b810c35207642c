"""kernelgate: a CI performance-regression gate for the CUDA kernels of YOLO models.

The data flows through one subpackage per stage, each importing only those below it (the layers
contract of import-linter in pyproject.toml):

    plugin | cli -> offline -> coldstart -> report -> verdict -> baseline -> measure -> machine | models
        -> config

``models`` builds what is measured, ``measure`` profiles and attributes it, ``baseline`` stores it,
``verdict`` compares and judges, ``report`` renders, ``coldstart`` times fresh processes, and the
pytest ``plugin`` (and the ``cli``) drive the whole run. docs/design.md has the picture.
"""

__version__ = "0.1.0"
