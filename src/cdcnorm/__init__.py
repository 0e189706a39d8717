"""cdcnorm: turn several vendors' change-data-capture output into one canonical change record on Spark."""

from __future__ import annotations

from cdcnorm._version import __version__

__all__ = ["__version__", "apply", "normalize", "read_changes", "read_quarantine", "read_schemas"]


def __getattr__(name: str):
    # Lazy: `import cdcnorm` must not start importing pyspark for `cdcnorm --version`.
    if name == "apply":
        from cdcnorm.state import apply

        return apply
    if name == "normalize":
        from cdcnorm.pipeline import normalize

        return normalize
    if name in ("read_changes", "read_quarantine", "read_schemas"):
        from cdcnorm import lake

        return getattr(lake, name)
    raise AttributeError(name)
