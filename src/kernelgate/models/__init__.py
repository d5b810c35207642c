"""Below the flow (measure -> baseline -> verdict -> report), what is measured: Ultralytics YOLO models
built from their bundled yaml or a ``.pt`` (``yolo``), the configuration matrix (``matrix``), the top-level
layers (``layers``) and their groups (``groups``: backbone, neck, head).

It imports only ``kernelgate.config``: nothing that measures, stores, judges or renders.
"""
