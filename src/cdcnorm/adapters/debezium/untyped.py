"""Schemaless Debezium columns (JsonConverter with `schemas.enable=false`): values read as the canonical type
the user declared for the column, under the connector's modes, since the JSON alone cannot type them.
"""

from __future__ import annotations

import re
from decimal import Decimal

from cdcnorm.adapters.debezium.numeric import decimal_decoder, decimal_text, rescale, variable_decimal
from cdcnorm.adapters.debezium.scalars import (
    PLAIN,
    Decoder,
    bool_dec,
    bytes_decoder,
    float_dec,
    json_dec,
    same,
)
from cdcnorm.adapters.debezium.temporal import (
    epoch_decoder,
    iso_date,
    iso_ntz,
    iso_time,
    micro_duration,
    time_decoder,
    zoned_timestamp,
)
from cdcnorm.adapters.debezium.values import Modes
from cdcnorm.errors import UsageError

UNTYPED_FLAG = "untyped_values"
"""Flag of a row decoded without a schema: values as parsed from the JSON or as the user declared, best effort."""

_DECLARED = re.compile(r"^\s*([a-z_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\))?\s*$")


def untyped_decoder(declared: str | None, modes: Modes) -> Decoder:
    """The decoder of a schemaless column whose canonical type the user declared (None: the value as parsed).

    The JSON alone cannot tell a Base64 decimal from text, nor micro- from milliseconds: the declared type,
    read under the connector's modes, says which. Values are best effort (rows flagged `untyped_values`).

    | declared | modes | the JSON value is read as |
    |---|---|---|
    | `decimal(p,s)` | precise, decimal_format base64 | Base64 of the unscaled integer (a number: as written) |
    | `decimal(p,s)` | precise + numeric, double, string | the number or decimal text, at scale s when exact |
    | `decimal` (no scale) | precise | a `{scale, value}` VariableScaleDecimal, or a number / text |
    | `timestamp_ntz(n)` | adaptive, adaptive_time_microseconds | n <= 3: ms (Timestamp), n <= 6: µs (MicroTimestamp), else ns |
    | `timestamp_ntz` | adaptive, adaptive_time_microseconds | µs (PostgreSQL's default precision; MySQL DATETIME(0-3) is ms: declare `timestamp_ntz(3)`) |
    | `timestamp_ntz[(n)]` | connect | ms |
    | `timestamp` | any | ISO text with offset (ZonedTimestamp); an integer as `timestamp_ntz` but UTC |
    | `date` | any | days since the epoch; text as an ISO date |
    | `time(n)` / `time` | adaptive | n <= 3: ms, n <= 6 or none: µs, else ns |
    | `time[(n)]` | adaptive_time_microseconds / connect | µs / ms |
    | `binary` | binary_handling | bytes, base64: Base64; base64-url-safe; hex |
    | `json` | any | JSON text parsed to nested values |
    | `interval` | any | µs (MicroDuration) -> ISO duration; text kept |
    | `boolean`, `tinyint`..`bigint`, `float`, `double`, `string` | any | that type (integers exact) |

    Temporal text (`time_precision=isostring`: '2011-01-11T16:40:30.123456789Z', '2005-05-12Z', '10:30:45Z') is
    read as the IsoTimestamp / IsoDate / IsoTime of a schema in every mode. Raises UsageError for a declared
    type outside this table.
    """
    if declared is None:
        return same
    m = _DECLARED.match(declared.lower())
    if m is None:
        raise UsageError(f"declared column type {declared!r} is not a canonical type name")
    kind, n, s = m[1], int(m[2]) if m[2] else None, m[3]
    if kind in ("decimal", "numeric"):
        if s is None and n is None:
            return variable_decimal if modes.decimal_handling == "precise" else decimal_text
        scale = int(s or 0)
        if modes.decimal_handling == "precise":
            return decimal_decoder(scale, modes.decimal_format == "numeric")
        return lambda v, fl=None: rescale(d, scale) if type(d := decimal_text(v)) is Decimal else d
    if kind in ("timestamp_ntz", "timestamp"):
        naive = kind == "timestamp_ntz"
        if modes.time_precision == "connect":
            unit = 1000
        else:
            unit = 1000 if n is not None and n <= 3 else 1_000_000 if n is None or n <= 6 else 1_000_000_000
        epoch = epoch_decoder(unit, naive)
        text = iso_ntz if naive else zoned_timestamp
        return lambda v, fl=None: text(v, fl) if type(v) is str else epoch(v, fl)
    if kind == "date":
        return iso_date
    if kind == "time":
        if modes.time_precision == "connect":
            unit = 1000
        elif modes.time_precision == "adaptive_time_microseconds":
            unit = 1_000_000
        else:
            unit = 1000 if n is not None and n <= 3 else 1_000_000 if n is None or n <= 6 else 1_000_000_000
        tdec = time_decoder(unit)
        return lambda v, fl=None: iso_time(v) if type(v) is str else tdec(v, fl)
    if kind in ("binary", "bytes"):
        return bytes_decoder(modes.binary_handling)
    if kind in ("json", "variant"):
        return json_dec if kind == "json" else same
    if kind == "interval":
        return lambda v, fl=None: v if type(v) is str else micro_duration(v)
    if kind in _UNTYPED_PLAIN:
        return _UNTYPED_PLAIN[kind]
    raise UsageError(f"declared column type {declared!r} is not one cdcnorm can decode Debezium values as")


_UNTYPED_PLAIN = {"boolean": bool_dec, "tinyint": PLAIN["int8"], "smallint": PLAIN["int16"],
                  "int": PLAIN["int32"], "bigint": PLAIN["int64"], "float": float_dec, "double": float_dec,
                  "string": same, "uuid": same}
