"""The canonical texts of a TIME (`[-]HH:MM:SS.ffffff`) and of an INTERVAL (an ISO-8601 duration), whichever
vendor delivered them.

Why one module: Datastream's and Debezium's TIME columns, Datastream's unified INTERVAL record and Debezium's
`MicroDuration` must give the same text for the same value, so `compare` sees equal values.
"""

from __future__ import annotations

from decimal import Decimal


def interval_str(v: dict) -> str:
    """The unified INTERVAL record {months, hours, micros} -> ISO-8601 duration ('P1Y2MT3H4M5.5S', 'PT0S')."""
    months, hours, micros = int(v.get("months") or 0), int(v.get("hours") or 0), int(v.get("micros") or 0)
    out = "P"
    if months:
        years, mons = divmod(abs(months), 12)
        sign = "-" if months < 0 else ""
        out += (f"{sign}{years}Y" if years else "") + (f"{sign}{mons}M" if mons else "")
    time = ""
    if hours:
        time += f"{hours}H"
    if micros:
        sign = "-" if micros < 0 else ""
        mins, rest = divmod(abs(micros), 60_000_000)
        if mins:
            time += f"{sign}{mins}M"
        if rest:
            secs = (Decimal(rest) / 1_000_000).normalize()
            time += f"{sign}{secs:f}S"
    if time:
        out += "T" + time
    return out if out != "P" else "PT0S"


def duration_str(us: int) -> str:
    """Micros -> '[-]HH:MM:SS.ffffff' (hours may exceed 24: MySQL TIME is an interval)."""
    if us < 0:
        return "-" + duration_str(-us)
    secs, frac = divmod(us, 1_000_000)
    mins, sec = divmod(secs, 60)
    hours, mins = divmod(mins, 60)
    return "%02d:%02d:%02d.%06d" % (hours, mins, sec, frac)  # noqa: UP031 - faster than an f-string per value
