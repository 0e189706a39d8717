"""`make demo`: the whole flow on the bundled samples, in one Spark session, with a readable summary.

Step 1 normalizes every vendor's hand-written samples into one lake (`demo-lake/`), quarantine included. Step 2
runs one simulated history through every vendor format, applies it and checks the ground truth (`demo-sim*/`).
Step 3 migrates between two vendors: one simulated history through both, compared, then cut over
(`demo-migration/`). Why simulated for steps 2 and 3: the bundled samples are unrelated snippets per vendor,
while a comparison needs the same source history through both vendors; the simulator writes exactly that.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cdcnorm.cli.output import console

OLD, NEW = "replicate", "debezium"
"""The migration step: from OLD to NEW, each in its first simulated vendor format."""


def normalize_samples(spark, samples: Path, lake: str) -> list[dict]:
    """Normalize `samples/<vendor>/` for every registered vendor that has samples; return the run reports."""
    from cdcnorm.adapters import available, spec
    from cdcnorm.ingest.pipeline import normalize

    reports = []
    for vendor in available():
        folder = samples / vendor
        if not folder.is_dir():
            continue
        with console.status(f"normalizing samples/{vendor}"):
            options = {k: str(samples / v) for k, v in spec(vendor).sample_options.items()}
            result = normalize([str(folder)], vendor, spark=spark, lake=lake, options=options)
        reports.append(result.report)
    return reports


def print_runs(reports: list[dict]) -> None:
    t = Table(title="samples normalized into the demo lake")
    for col in ("vendor", "files", "records", "rows", "metadata", "filtered", "merged", "duplicates",
                "quarantined", "reconciled"):
        t.add_column(col, justify="right")
    for r in reports:
        oc = r["outcomes"]
        t.add_row(r["vendor"], str(r["files"]), str(r["records_read"]), str(r["rows_written"]),
                  str(oc["metadata"]), str(oc["filtered"]), str(oc["merged"]), str(oc["duplicate"]),
                  str(oc["quarantined"]), "[green]yes[/green]" if r["reconciled"] else "[red]NO[/red]")
    console.print(t)
    for r in reports:
        if r["quarantine_by_reason"]:
            reasons = ", ".join(f"{k}: {v}" for k, v in sorted(r["quarantine_by_reason"].items()))
            console.print(f"  {r['vendor']} quarantine (deliberately broken or incomplete samples, see samples/{r['vendor']}/README.md): {reasons}")


def simulated_flow(spark, root: Path) -> bool:
    """Simulate one history for every vendor format, normalize into one lake, apply, and check the ground truth."""
    from cdcnorm.simulate.verify import build_lake, check_format

    console.rule("one simulated history through every vendor format: simulate, normalize, apply, verify")
    with console.status("simulating, normalizing every vendor format into one lake, applying"):
        run = build_lake(spark, root / "demo-sim", root / "demo-sim-lake", tables=3, rows=20, changes=150, seed=7)
    t = Table(title="current state vs ground truth")
    for col in ("vendor format", "records", "rows", "duplicates dropped", "quarantined", "equals ground truth"):
        t.add_column(col, justify="right")
    ok = True
    for vf, report in run["reports"].items():
        problems = check_format(run["frames"], run["manifest"], vf)
        ok = ok and not problems and report["reconciled"]
        t.add_row(vf, str(report["records_read"]), str(report["rows_written"]), str(report["outcomes"]["duplicate"]),
                  str(report["outcomes"]["quarantined"]),
                  "[green]yes[/green]" if not problems else f"[red]no: {len(problems)} difference(s)[/red]")
    console.print(t)
    return ok


def migration_demo(spark, root: Path, console: Console = console) -> int:
    """Simulate, normalize both vendors into one lake, compare them (HTML report) and stitch a cut-over.

    Returns 0 (the demo shows what the commands report; a difference is part of the show, not a failure).
    """
    import shutil

    from cdcnorm.cli.compare import print_summary
    from cdcnorm.cli.cutover import print_cutover
    from cdcnorm.ingest.pipeline import normalize
    from cdcnorm.migrate import compare, write_reports
    from cdcnorm.migrate.cutover import cutover
    from cdcnorm.simulate import VENDOR_FORMATS, simulate

    work = root / "demo-migration"
    shutil.rmtree(work, ignore_errors=True)
    first_format = {vendor: next(vf for vf, (v, _) in VENDOR_FORMATS.items() if v == vendor) for vendor in (OLD, NEW)}
    with console.status("simulating one source history through two vendors"):
        manifest = simulate(work / "sim", vendors=list(first_format.values()), tables=2, rows=20, changes=80,
                            quirks=[])
    lake = str(work / "lake")
    for vendor, vf in first_format.items():
        with console.status(f"normalizing the simulated {vendor} output"):
            normalize([str(manifest.input_dir(vf))], vendor, spark=spark, lake=lake)
    with console.status(f"comparing {OLD} with {NEW}") as status:
        report = compare(spark, lake, lake, left_vendor=OLD, right_vendor=NEW, progress=status.update)
    print_summary(report, console)
    paths = write_reports(report, str(work / "report"))
    console.print(f"compare report: {paths['html']}", highlight=False)
    with console.status(f"cutting over from {OLD} to {NEW}") as status:
        cut = cutover(spark, lake, lake, str(work / "stitched"), OLD, NEW, stream="migrated", progress=status.update)
    print_cutover(cut, console)
    return 0


def main(argv: list[str] | None = None) -> int:
    from cdcnorm.lake.store import Lake
    from cdcnorm.runtime.session import get_spark

    argv = argv if argv is not None else sys.argv[1:]
    root = Path(argv[0] if argv else ".").resolve()
    lake = str(root / "demo-lake")
    with console.status("starting Spark"):
        spark = get_spark(quiet=True)
    reports = normalize_samples(spark, root / "samples", lake)
    print_runs(reports)
    changes = Lake(spark, lake).changes()
    by_vendor = {r["vendor"]: r["count"] for r in changes.groupBy("vendor").count().collect()}
    console.print(f"demo lake: {lake} — canonical rows per vendor: {by_vendor}")
    ok = all(r["reconciled"] for r in reports)
    console.print("[green]every input record is accounted for[/green]" if ok else "[red]reconciliation failed[/red]")
    ok = simulated_flow(spark, root) and ok
    console.rule("migrating from one vendor to another: compare, then cut over")
    migration_demo(spark, root, console)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
