"""cdcnorm: turn several vendors' change-data-capture output into one canonical change record on Spark."""

from __future__ import annotations

__all__ = ["__version__", "apply", "normalize", "read_changes", "read_quarantine", "read_schemas"]


def __getattr__(name: str):
    # Lazy: `import cdcnorm` must not start importing pyspark for `cdcnorm --version`, nor look its own version up
    # (importlib.metadata and a scan of the installed distributions, 0.1 to 0.2 s) in every Python process Spark
    # starts for a run (the data source's planner, the streaming source runner, each Python worker) that imports
    # a cdcnorm module.
    if name == "__version__":
        from cdcnorm._version import __version__

        return __version__
    if name == "apply":
        from cdcnorm.state import apply

        return apply
    if name == "normalize":
        from cdcnorm.ingest.pipeline import normalize

        return normalize
    if name in ("read_changes", "read_quarantine", "read_schemas"):
        from cdcnorm.lake import store

        return getattr(store, name)
    raise AttributeError(name)
