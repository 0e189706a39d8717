"""Every simulated vendor format, collected from the encoder modules of the registered vendors.

Why derived: adding a vendor must not mean editing lists here. A vendor's encoder module is
`VendorSpec.encoder`, else `cdcnorm.simulate.encoders.<vendor>`; vendors without one are simply not simulated.
"""

from __future__ import annotations

import importlib
import importlib.util

from cdcnorm.simulate.encoders import SimFormat


def _encoder_module(vendor: str, declared: str | None) -> str | None:
    module = declared or f"cdcnorm.simulate.encoders.{vendor}"
    try:
        return module if importlib.util.find_spec(module) is not None else None
    except ModuleNotFoundError:
        return None


def simulated_formats() -> dict[str, SimFormat]:
    """Vendor format name -> its `SimFormat`, vendors in registry order, formats in their module's order."""
    from cdcnorm.adapters import specs

    found: dict[str, SimFormat] = {}
    for spec in specs():
        module = _encoder_module(spec.name, spec.encoder)
        if module is None:
            continue
        for f in importlib.import_module(module).FORMATS:
            found[f.name] = f
    return found


FORMATS: dict[str, SimFormat] = simulated_formats()
"""The simulated formats of the vendors registered when the simulator was imported."""
