"""The one adapter registry: vendor name -> its :class:`~cdcnorm.adapters.spec.VendorSpec`, loaded lazily.

Three ways in, one registry:

* the built-in vendors, one line each in :data:`REGISTRY` (kept sorted);
* :func:`register` at run time: ``register("acme", "acme_cdc.adapter:AcmeAdapter")`` (an adapter class or
  a `VendorSpec`, given as `"module:attr"` or as the object itself);
* a Python entry point in the group :data:`ENTRY_POINT_GROUP`, so a third-party package adds a vendor
  without editing cdcnorm::

      [project.entry-points."cdcnorm.adapters"]
      acme = "acme_cdc:SPEC"

Nothing is imported until a vendor is asked for; unknown names fail with a "did you mean" hint. Every vendor
list in cdcnorm (CLI help, docs, simulator, compare rules, demo) is read from here. How to write an adapter:
see :mod:`cdcnorm.adapters.base`.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from typing import TYPE_CHECKING, Any

from cdcnorm.adapters.spec import LossyRule, VendorSpec
from cdcnorm.errors import UsageError

if TYPE_CHECKING:
    from cdcnorm.adapters.base import Adapter, AdapterOptions, MessageMeta

REGISTRY: dict[str, str] = {
    "canal": "cdcnorm.adapters.canal:SPEC",
    "datahub": "cdcnorm.adapters.datahub:SPEC",
    "datastream": "cdcnorm.adapters.datastream:SPEC",
    "debezium": "cdcnorm.adapters.debezium:SPEC",
    "dms": "cdcnorm.adapters.dms:SPEC",
    "goldengate": "cdcnorm.adapters.goldengate:SPEC",
    "maxwell": "cdcnorm.adapters.maxwell:SPEC",
    "replicate": "cdcnorm.adapters.replicate:SPEC",
}
"""The built-in vendors: name -> `"module:attr"` of their spec."""
assert list(REGISTRY) == sorted(REGISTRY), "keep the adapter registry sorted"

ENTRY_POINT_GROUP = "cdcnorm.adapters"
"""The entry-point group third-party vendor packages declare (value: a `VendorSpec` or an adapter class)."""

Target = Any
"""What :func:`register` accepts: a `VendorSpec`, an adapter class, or `"module:attr"` naming either."""

_registered: dict[str, Target] = {}
_loaded: dict[str, tuple[Any, VendorSpec]] = {}

__all__ = [
    "ENTRY_POINT_GROUP", "REGISTRY", "Adapter", "AdapterOptions", "LossyRule", "MessageMeta", "VendorSpec",
    "adapter_class", "available", "get_adapter", "names", "register", "spec", "specs", "unregister",
]


def __getattr__(name: str) -> Any:
    """`Adapter`, `AdapterOptions` and `MessageMeta` are imported on first use: naming the vendors (CLI help)
    must not start pyspark."""
    if name in ("Adapter", "AdapterOptions", "MessageMeta"):
        from cdcnorm.adapters import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(name: str, target: Target) -> None:
    """Add (or replace) a vendor: `target` is a `VendorSpec`, an adapter class, or either as `"module:attr"`.

    A built-in vendor cannot be replaced: register the plug-in under its own name.
    """
    key = name.lower()
    if key in REGISTRY:
        raise UsageError(f"'{key}' is a built-in vendor; register the plug-in under another name.")
    _registered[key] = target
    _loaded.pop(key, None)


def unregister(name: str) -> None:
    """Forget a vendor added with :func:`register` (tests use it to clean up)."""
    _registered.pop(name.lower(), None)
    _loaded.pop(name.lower(), None)


_scanned: tuple[tuple[str, ...], dict[str, Any]] | None = None


def _entry_points() -> dict[str, Any]:
    """Installed plug-ins from the distributions' metadata, scanned again whenever `sys.path` changes."""
    global _scanned
    path = tuple(sys.path)
    if _scanned is None or _scanned[0] != path:
        import importlib.metadata  # here: a Python worker unpickling an adapter never lists the vendors

        found = {ep.name.lower(): ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
        _scanned = (path, found)
    return _scanned[1]


def _targets() -> dict[str, Any]:
    found: dict[str, Any] = {**_entry_points(), **_registered, **REGISTRY}
    return {k: found[k] for k in sorted(found)}


def names() -> list[str]:
    """Every registered vendor name, sorted (built-in, registered and installed plug-ins)."""
    return list(_targets())


def _load(name: str, target: Any) -> VendorSpec:
    metadata = sys.modules.get("importlib.metadata")  # an entry point exists only once it was imported
    if metadata is not None and isinstance(target, metadata.EntryPoint):
        obj = target.load()
    elif isinstance(target, str):
        module, _, attr = target.partition(":")
        obj = getattr(importlib.import_module(module), attr) if attr else importlib.import_module(module)
    else:
        obj = target
    if isinstance(obj, VendorSpec):
        found = obj
    else:
        from cdcnorm.adapters.base import Adapter

        if not (isinstance(obj, type) and issubclass(obj, Adapter)):
            raise UsageError(f"Vendor '{name}' points at {obj!r}, which is neither a VendorSpec nor an Adapter class.")
        found = VendorSpec.of_adapter(obj)
    if found.name != name:
        raise UsageError(f"Vendor '{name}' is registered with a spec named '{found.name}'.")
    return found


def _unknown(name: str) -> UsageError:
    known = names()
    close = difflib.get_close_matches(name.lower(), known, n=1)
    hint = f" Did you mean {close[0]}?" if close else ""
    return UsageError(f"Unknown vendor '{name}'.{hint} Known vendors: {', '.join(known)}.")


def spec(name: str) -> VendorSpec:
    """The spec of a vendor; unknown names fail with a "did you mean" hint."""
    key = name.lower()
    target = _targets().get(key)
    if target is None:
        raise _unknown(name)
    if key not in _loaded or _loaded[key][0] is not target:
        _loaded[key] = (target, _load(key, target))
    return _loaded[key][1]


def specs() -> list[VendorSpec]:
    """The specs of every registered vendor whose package can be imported, sorted by name."""
    found = []
    for name in names():
        try:
            found.append(spec(name))
        except ImportError:
            continue
    return found


def available() -> list[str]:
    """Vendor names whose spec and adapter module can be imported."""
    found = []
    for s in specs():
        module = s.adapter.split(":")[0]
        if s.klass is not None or importlib.util.find_spec(module) is not None:
            found.append(s.name)
    return found


def adapter_class(name: str) -> type[Adapter]:
    """The adapter class for a vendor name; unknown names fail with a "did you mean" hint."""
    return spec(name).adapter_class()


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
