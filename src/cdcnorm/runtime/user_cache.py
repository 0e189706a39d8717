"""Where cdcnorm keeps per-user caches that only speed things up (the JVM class archive, the Python workers'
launcher): `$XDG_CACHE_HOME/cdcnorm`, else `~/.cache/cdcnorm`. Deleting it loses nothing but time."""

from __future__ import annotations

import os


def user_cache_dir(*parts: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cdcnorm", *parts)
