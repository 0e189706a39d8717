"""The installed version of cdcnorm, in its own module so code inside the package never imports the package root."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cdcnorm")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+local"
