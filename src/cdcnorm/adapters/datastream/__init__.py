"""The datastream vendor package: its adapter and the vendor semantics it needs."""

from cdcnorm.adapters.datastream.adapter import DatastreamAdapter

__all__ = ["DatastreamAdapter"]
