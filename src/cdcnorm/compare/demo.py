"""The migration part of `make demo`: one simulated history through two vendors, compared, then cut over.

Why simulated: the bundled samples are unrelated snippets per vendor, while a comparison needs the same source
history through both vendors; the simulator writes exactly that, as each vendor would deliver it.
"""

from __future__ import annotations

from pathlib import Path

OLD, NEW = "replicate", "datastream"


def migration_demo(spark, root: Path, console=None) -> int:
    """Simulate, normalize both vendors into one lake, compare them (HTML report) and stitch a cut-over.

    Returns 0 (the demo shows what the commands report; a difference is part of the show, not a failure).
    """
    import shutil

    from rich.console import Console

    import cdcnorm
    from cdcnorm.compare import compare, print_summary, write_reports
    from cdcnorm.cutover import cutover, print_cutover
    from cdcnorm.simulate import VENDOR_FORMATS, simulate

    console = console or Console()
    work = root / "demo-migration"
    shutil.rmtree(work, ignore_errors=True)
    first_format = {vendor: next(vf for vf, (v, _) in VENDOR_FORMATS.items() if v == vendor) for vendor in (OLD, NEW)}
    with console.status("simulating one source history through two vendors"):
        manifest = simulate(work / "sim", vendors=list(first_format.values()), tables=2, rows=20, changes=80,
                            quirks=[])
    lake = str(work / "lake")
    for vendor, vf in first_format.items():
        with console.status(f"normalizing the simulated {vendor} output"):
            cdcnorm.normalize([str(manifest.input_dir(vf))], vendor, spark=spark, lake=lake)
    with console.status(f"comparing {OLD} with {NEW}") as status:
        report = compare(spark, lake, lake, left_vendor=OLD, right_vendor=NEW, progress=status.update)
    print_summary(report, console)
    paths = write_reports(report, str(work / "report"))
    console.print(f"compare report: {paths['html']}", highlight=False)
    with console.status(f"cutting over from {OLD} to {NEW}") as status:
        cut = cutover(spark, lake, lake, str(work / "stitched"), OLD, NEW, stream="migrated", progress=status.update)
    print_cutover(cut, console)
    return 0
