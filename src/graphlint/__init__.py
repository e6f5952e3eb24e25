"""graphlint: find CUDA-graph capture hazards in PyTorch code before they cost a day."""

from __future__ import annotations

from graphlint.markers import capture_region

__version__ = "0.2.0"

__all__ = ["__version__", "capture_region"]
