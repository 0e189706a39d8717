"""Dates, times, timestamps and durations: Debezium's and Kafka Connect's temporal types (epoch counts in ms, µs
or ns, ISO text with or without offset, `MicroDuration`) decoded to `date`, naive or UTC `datetime`, the
`HH:MM:SS.ffffff` time text and the ISO duration text.

Why these share a module: what a canonical timestamp cannot hold (nanoseconds, a non-zero offset, PostgreSQL's
infinity, years outside 1..9999) is kept as text, flagged, by the same rules for every temporal type.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from cdcnorm.adapters.debezium.scalars import PLAIN, Decoder, bad_value, flag
from cdcnorm.canonical.durations import duration_str, interval_str

_UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_date_from_ordinal = dt.date.fromordinal
_TD = dt.timedelta
_PG_INFINITY_US = 9223372036825200000
_PG_NEG_INFINITY_US = -9223372036832400000
_INT64 = PLAIN["int64"]

TIME_UNITS = {"io.debezium.time.Time": 1000, "io.debezium.time.MicroTime": 1_000_000,
              "io.debezium.time.NanoTime": 1_000_000_000, "org.apache.kafka.connect.data.Time": 1000}
"""Time-of-day types -> units per second of their count."""
TS_UNITS = {"io.debezium.time.Timestamp": 1000, "io.debezium.time.MicroTimestamp": 1_000_000,
            "io.debezium.time.NanoTimestamp": 1_000_000_000, "org.apache.kafka.connect.data.Timestamp": 1000}
"""Epoch timestamp types -> units per second of their count."""
DATES = frozenset(("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"))
"""Day-count date types."""


def _odd_time(v: Any, fl: list | None, unit: int, naive: bool) -> dt.datetime | str:
    """A timestamp that is not an in-range integer: digit text (Protobuf), PostgreSQL's infinity, out of range."""
    if v is None:
        return None
    if type(v) is str and re.fullmatch(r"-?\d+", v.strip()):
        return epoch_decoder(unit, naive)(int(v), fl)
    if type(v) is not int:
        if isinstance(v, dt.datetime):  # fastavro's timestamp-millis
            return v.astimezone(_UTC).replace(tzinfo=None) if naive and v.tzinfo else v
        raise bad_value("an epoch timestamp", v)
    flag(fl)
    us = v * 1_000_000 // unit
    if us >= _PG_INFINITY_US:
        return "infinity"
    if us <= _PG_NEG_INFINITY_US:
        return "-infinity"
    return str(v)


def epoch_decoder(unit: int, naive: bool) -> Decoder:
    """Epoch integers in 1/unit seconds -> naive (wall clock) or UTC datetime; nanoseconds beyond the
    microsecond -> ISO text with 9 digits, flagged."""
    base = _EPOCH_NAIVE if naive else _EPOCH
    if unit == 1000:
        def ms(v: Any, fl: list | None = None) -> Any:
            if type(v) is int:
                try:
                    return base + _TD(milliseconds=v)
                except OverflowError:
                    pass
            return _odd_time(v, fl, unit, naive)
        return ms
    if unit == 1_000_000:
        def us(v: Any, fl: list | None = None) -> Any:
            if type(v) is int:
                try:
                    return base + _TD(microseconds=v)
                except OverflowError:
                    pass
            return _odd_time(v, fl, unit, naive)
        return us

    def ns(v: Any, fl: list | None = None) -> Any:
        if type(v) is int:
            micros, rest = divmod(v, 1000)
            try:
                ts = base + _TD(microseconds=micros)
            except OverflowError:
                return _odd_time(v, fl, unit, naive)
            if not rest:
                return ts
            flag(fl)
            text = ts.replace(tzinfo=None).isoformat(timespec="microseconds") + f"{rest:03d}"
            return text if naive else text + "Z"
        return _odd_time(v, fl, unit, naive)
    return ns


def date_dec(v: Any, fl: list | None = None) -> dt.date | str:
    if type(v) is int:
        try:
            return _date_from_ordinal(v + _EPOCH_ORDINAL)
        except (OverflowError, ValueError):
            flag(fl)
            return str(v)
    if type(v) is dt.date or v is None:  # fastavro's `date`
        return v
    if type(v) is str and re.fullmatch(r"-?\d+", v.strip()):
        return date_dec(int(v), fl)
    raise bad_value("a day count", v)


def time_decoder(unit: int) -> Decoder:
    """Time of day in 1/unit seconds -> 'HH:MM:SS.ffffff' (MySQL TIME may be negative or beyond 24 h)."""
    def dec(v: Any, fl: list | None = None) -> str:
        if type(v) is not int:
            if v is None:
                return None
            if isinstance(v, dt.time):  # fastavro's time-millis
                return v.isoformat(timespec="microseconds")
            if type(v) is str and re.fullmatch(r"-?\d+", v.strip()):
                v = int(v)
            else:
                raise bad_value("a time of day count", v)
        if unit == 1_000_000_000:
            micros, rest = divmod(v, 1000)
            return duration_str(micros) + (f"{rest:03d}" if rest else "")
        return duration_str(v * (1_000_000 // unit))

    return dec


_FRACTION = re.compile(r"\.(\d+)")
_FAR_YEAR = re.compile(r"(?:[+-]\d{4,}|\d{5,})-\d\d-\d\d")


def _zoned_odd(v: Any, fl: list | None) -> Any:
    if type(v) is not str:
        if v is None:
            return None
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            return v.astimezone(_UTC)
        raise bad_value("an ISO timestamp with offset", v)
    if v in ("infinity", "-infinity") or _FAR_YEAR.match(v):  # PostgreSQL's infinity, BC years, years > 9999
        flag(fl)
        return v
    raise bad_value("an ISO timestamp with offset", v)


def zoned_timestamp(v: Any, fl: list | None = None) -> Any:
    """ISO-8601 with an offset and 0-9 fraction digits -> UTC datetime; kept as text (flagged) when its
    nanoseconds or a non-zero offset would be lost."""
    try:
        ts = dt.datetime.fromisoformat(v)
    except (TypeError, ValueError):
        return _zoned_odd(v, fl)
    if ts.tzinfo is _UTC and len(v) <= 27:  # 'Z' or '+00:00' with at most 6 fraction digits
        return ts
    if ts.tzinfo is None:
        raise bad_value("an ISO timestamp with offset", v)
    m = _FRACTION.search(v, 19)
    if m and len(m[1]) > 6 and m[1][6:].strip("0") or ts.utcoffset():
        flag(fl)
        return v
    return ts.astimezone(_UTC)


def micro_duration(v: Any, fl: list | None = None) -> str:
    if type(v) is not int:
        v = _INT64(v)
        if v is None:
            return None
    sign = -1 if v < 0 else 1
    hours, rest = divmod(abs(v), 3_600_000_000)
    return interval_str({"hours": sign * hours, "micros": sign * rest})


def iso_ntz(v: Any, fl: list | None = None) -> dt.datetime | str | None:
    """`time.precision.mode=isostring` text (`IsoTimestamp`, the wall clock written with a `Z`) -> naive
    datetime; nanoseconds beyond the microsecond, and years outside 1..9999, stay text, flagged."""
    if type(v) is not str:
        if v is None or type(v) is dt.datetime and v.tzinfo is None:
            return v
        raise bad_value("an ISO timestamp", v)
    try:
        ts = dt.datetime.fromisoformat(v)
    except ValueError:
        return _zoned_odd(v, fl)
    m = _FRACTION.search(v, 19)
    if m and len(m[1]) > 6 and m[1][6:].strip("0"):
        flag(fl)
        return v
    return ts.astimezone(_UTC).replace(tzinfo=None) if ts.tzinfo else ts


def iso_date(v: Any, fl: list | None = None) -> dt.date | str | None:
    """`IsoDate` text ('2005-05-12Z') -> date; a day count as `io.debezium.time.Date`."""
    if type(v) is not str:
        return date_dec(v, fl)
    try:
        return dt.date.fromisoformat(v[:-1] if v.endswith("Z") else v)
    except ValueError:
        return _zoned_odd(v, fl)


_ISO_TIME = re.compile(r"(-?\d{2,}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z?")


def iso_time(v: Any, fl: list | None = None) -> str | None:
    """`IsoTime` text ('10:30:45.123456789Z', a wall-clock time) -> 'HH:MM:SS.ffffff' (9 digits when ns), as
    the other time types; other text (a ZonedTime with an offset) is kept."""
    if type(v) is not str:
        if v is None:
            return None
        raise bad_value("an ISO time", v)
    m = _ISO_TIME.fullmatch(v)
    if m is None:
        return v
    frac = m[2] or ""
    return f"{m[1]}.{frac.ljust(9, '0') if frac[6:].strip('0') else frac[:6].ljust(6, '0')}"


ISO_DECODERS = {"io.debezium.time.IsoDate": iso_date, "io.debezium.time.IsoTime": iso_time,
                "io.debezium.time.IsoTimestamp": iso_ntz}
"""`time.precision.mode=isostring` types -> their decoders."""
