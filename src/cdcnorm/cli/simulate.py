"""`cdcnorm simulate`: one simulated source history as each vendor would deliver it, plus the ground truth."""

from __future__ import annotations

from typing import Annotated

import typer

from cdcnorm.cli.guard import run_guarded


def simulate(
    out: Annotated[str, typer.Option("--out", help="Output folder.")],
    vendor: Annotated[list[str] | None, typer.Option("--vendor", help="Vendor, vendor format, or all (repeatable).")] = None,
    tables: Annotated[int, typer.Option("--tables", help="Number of simulated tables.")] = 3,
    rows: Annotated[int, typer.Option("--rows", help="Rows per table in the backfill.")] = 100,
    changes: Annotated[int, typer.Option("--changes", help="Changes after the backfill.")] = 500,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the history.")] = 1,
    quirk: Annotated[list[str] | None, typer.Option("--quirk", help="Delivery quirk to switch on (default: all; 'none'; "
                                                    "late_redelivery only by name).")] = None,
    rotate: Annotated[int, typer.Option("--rotate", min=1, help="Records per output file.")] = 500,
    days: Annotated[float, typer.Option("--days", min=0, help="Spread the changes over N days of source time; files "
                                        "also rotate daily (0: about a second per change).")] = 0,
    late_days: Annotated[float, typer.Option("--late-days", min=0, help="late_redelivery: the copies land this many "
                                             "days after their originals.")] = 20.0,
    feed: Annotated[bool, typer.Option("--feed", help="Land the files in their input folders one at a time, in "
                                       "delivery order, one of them two days late (a feeder for --follow).")] = False,
    interval: Annotated[float, typer.Option("--interval", min=0, help="--feed: seconds between two files.")] = 1.0,
) -> None:
    """Write one simulated source history as each vendor would deliver it, plus the ground truth."""

    def run() -> int:
        from cdcnorm.simulate import simulate_command
        from cdcnorm.simulate.feed import feed_command

        _check(vendor or ["all"], quirk)
        if feed:
            return feed_command(vendor or ["all"], tables, rows, changes, seed, out, quirk, rotate, interval,
                                days=days, late_days=late_days)
        return simulate_command(vendor or ["all"], tables, rows, changes, seed, out, quirk, rotate, days=days,
                                late_days=late_days)

    run_guarded(run)


def _check(vendors: list[str], quirks: list[str] | None) -> None:
    """Unknown vendors or quirks are usage errors, reported (and traced under CDCNORM_DEBUG) like every command's."""
    from cdcnorm.errors import UsageError
    from cdcnorm.simulate import resolve_formats
    from cdcnorm.simulate.delivery import parse_quirks

    try:
        resolve_formats(vendors)
        parse_quirks(quirks)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
