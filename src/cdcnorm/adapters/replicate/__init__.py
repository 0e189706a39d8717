"""The replicate vendor package: its adapter and the vendor semantics it needs."""

from cdcnorm.adapters.replicate.adapter import ReplicateAdapter

__all__ = ["ReplicateAdapter"]
