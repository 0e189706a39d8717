"""The one adapter registry: vendor name -> "module:Class", imported lazily when asked for."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from cdcnorm.adapters.base import Adapter, AdapterOptions, MessageMeta
from cdcnorm.errors import UsageError

REGISTRY: dict[str, str] = {
    "datahub": "cdcnorm.adapters.datahub.adapter:DataHubAdapter",
    "datastream": "cdcnorm.adapters.datastream.adapter:DatastreamAdapter",
    "replicate": "cdcnorm.adapters.replicate.adapter:ReplicateAdapter",
}
assert list(REGISTRY) == sorted(REGISTRY), "keep the adapter registry sorted"

__all__ = ["REGISTRY", "Adapter", "AdapterOptions", "MessageMeta", "adapter_class", "available", "get_adapter"]


def available() -> list[str]:
    """Vendor names whose adapter module is present."""
    names = []
    for name, target in REGISTRY.items():
        module = target.split(":")[0]
        if importlib.util.find_spec(module) is not None:
            names.append(name)
    return names


def adapter_class(name: str) -> type[Adapter]:
    """The adapter class for a vendor name; unknown names fail with a "did you mean" hint."""
    target = REGISTRY.get(name.lower())
    if target is None:
        close = difflib.get_close_matches(name.lower(), REGISTRY, n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise UsageError(f"Unknown vendor '{name}'.{hint} Known vendors: {', '.join(REGISTRY)}.")
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)


def get_adapter(name: str, options: dict[str, Any] | None = None) -> Adapter:
    """Build an adapter with validated options (a misspelt option fails with the allowed names)."""
    from pydantic import ValidationError

    klass = adapter_class(name)
    try:
        return klass(options)
    except ValidationError as exc:
        allowed = ", ".join(sorted(klass.Options.model_fields))
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"Invalid {name} option ({problems}). Allowed options: {allowed}.") from None
