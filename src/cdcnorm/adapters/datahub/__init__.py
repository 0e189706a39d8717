"""The datahub vendor package: its adapter and the vendor semantics it needs."""

from cdcnorm.adapters.datahub.adapter import DataHubAdapter

__all__ = ["DataHubAdapter"]
