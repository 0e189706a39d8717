"""Render the canonical record's tables for `docs/canonical.md` (a test keeps the doc in sync).

Run `python -m cdcnorm.canonical.doc docs/canonical.md` to rewrite the generated sections in place.
"""

from __future__ import annotations

import re
import sys

from cdcnorm.canonical.schema import (
    COLUMNS,
    FLAGS,
    OPS,
    QUARANTINE_COLUMNS,
    RECORD_ERRORS,
    SCHEMA_VERSION_COLUMNS,
    Column,
)
from cdcnorm.containers.errors import CONTAINER_ERRORS


def _table(columns: tuple[Column, ...]) -> str:
    lines = ["| column | type | nullable | meaning |", "|---|---|---|---|"]
    for c in columns:
        lines.append(f"| `{c.name}` | `{c.type.simpleString()}` | {'yes' if c.nullable else 'no'} | {c.meaning} |")
    return "\n".join(lines)


def _vendors() -> str:
    """The built-in vendors from the adapter registry (plug-ins installed here are not cdcnorm's to document)."""
    from cdcnorm.adapters import REGISTRY, spec

    lines = ["| vendor | formats | flags it emits | what |", "|---|---|---|---|"]
    for name in REGISTRY:
        s = spec(name)
        formats = ", ".join(f"`{f}`" for f in s.formats)
        flags = ", ".join(f"`{f}`" for f in sorted(s.flags))
        lines.append(f"| `{name}` | {formats} | {flags} | {s.summary} |")
    return "\n".join(lines)


def sections() -> dict[str, str]:
    """Generated markdown, by section name."""
    return {
        "vendors": _vendors(),
        "columns": _table(COLUMNS),
        "flags": "\n".join(["| flag | meaning |", "|---|---|", *[f"| `{k}` | {v} |" for k, v in FLAGS.items()]]),
        "ops": ", ".join(f"`{o}`" for o in OPS),
        "quarantine": _table(QUARANTINE_COLUMNS),
        "schemas": _table(SCHEMA_VERSION_COLUMNS),
        "container_errors": "\n".join(["| error class | meaning |", "|---|---|",
                                        *[f"| `{k}` | {v} |" for k, v in CONTAINER_ERRORS.items()]]),
        "record_errors": "\n".join(["| error class | meaning |", "|---|---|",
                                     *[f"| `{k}` | {v} |" for k, v in RECORD_ERRORS.items()]]),
    }


def render(text: str) -> str:
    """Replace every `<!-- gen:NAME -->...<!-- /gen:NAME -->` block with its generated content."""
    for name, body in sections().items():
        pattern = re.compile(rf"(<!-- gen:{name} -->\n)(?:.*?\n)?(<!-- /gen:{name} -->)", re.S)
        text = pattern.sub(lambda m, b=body: m.group(1) + b + "\n" + m.group(2), text)
    return text


if __name__ == "__main__":
    path = sys.argv[1]
    with open(path, encoding="utf-8") as fh:
        current = fh.read()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render(current))
