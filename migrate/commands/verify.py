"""``kmigrate verify``: prove, partition by partition, that no record was lost or changed.

Same cluster, before and after a migration::

    kmigrate verify snapshot --bootstrap-server A -o before.json
    kmigrate partitions ...
    kmigrate verify compare before.json [--bootstrap-server A] [--against after.json]

Two clusters (a mirror-based migration)::

    kmigrate verify --source-bootstrap A --target-bootstrap B

Exit 0 when every partition matches, 1 when a difference is found, 2 for bad input.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from migrate.adapters.spark import SparkSettings, parse_spark_conf, preflight, spark_session
from migrate.core.clientconfig import client_settings
from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json, err_console
from migrate.errors import EXIT_FAILURE, BadInput
from migrate.core.compare import Report, compare_same
from migrate.core.snapshot import Snapshot, read_snapshot

app = typer.Typer(
    help="Prove that no record was lost or changed: record counts and checksums per partition, computed by Spark.",
    invoke_without_command=True,
)

TOPIC_OPTION = typer.Option(None, "--topic", help="Topic to verify (repeat, or separate with commas). Default: all non-internal topics.")
INCLUDE_OPTION = typer.Option(None, "--include", help="Regular expression of topics to verify (whole name), like Kafka's tools.")
MASTER_OPTION = typer.Option("local[*]", "--master", help="Spark master: local[*], spark://host:7077, yarn, k8s://https://host:443.")
SPARK_CONF_OPTION = typer.Option(None, "--spark-conf", help="Spark setting key=value (repeat), e.g. spark.executor.memory=4g.")
JARS_OPTION = typer.Option(None, "--jars", help="Comma-separated jars of Spark's Kafka source (spark-sql-kafka-0-10 and its dependencies) instead of fetching them with Maven.")
ISOLATION_OPTION = typer.Option("read_committed", "--isolation-level", help="read_committed (skip aborted transactions; read up to the last stable offset) or read_uncommitted.")
FAIL_ON_TAIL_OPTION = typer.Option(False, "--fail-on-tail", help="Count records past the common prefix (produced since the snapshot, or not yet mirrored) as a difference: for topics whose producers are stopped.")
TIMEOUT_OPTION = typer.Option(15000, "--timeout-ms", help="Timeout of each Kafka request; an unreachable cluster fails after it.")
COMMAND_CONFIG_OPTION = typer.Option(None, "--command-config", help="Kafka client settings (SASL/SSL), as for Kafka's own tools.")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _topics(values: Optional[list[str]]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values or []:
        out.extend(t.strip() for t in v.split(",") if t.strip())
    return tuple(dict.fromkeys(out))


def _spark(master: str, spark_conf: Optional[list[str]], jars: Optional[str], app_name: str) -> SparkSettings:
    jar_list = tuple(j.strip() for j in jars.split(",") if j.strip()) if jars else None
    if jars is not None and not jar_list:
        raise BadInput("--jars is empty: give comma-separated jar files")
    settings = SparkSettings(master=master, conf=parse_spark_conf(spark_conf or []), jars=jar_list, app_name=app_name)
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is None:  # a session already running in this process was checked when it started
        preflight(settings)
    return settings


def _progress(output: OutputFormat):
    def show(msg: str) -> None:
        err_console.print(f"[dim]verify: {msg}[/dim]")

    return show


def _side(bootstrap: str, command_config: Optional[Path], timeout_ms: int):
    from migrate.adapters.offsets import KafkaSide

    if timeout_ms <= 0:
        raise BadInput(f"--timeout-ms {timeout_ms}: give a positive number of milliseconds")
    return KafkaSide(client_settings(bootstrap, command_config), timeout_s=timeout_ms / 1000)


def _write_snapshot(snapshot: Snapshot, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(snapshot.to_json(), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise BadInput(f"cannot write the snapshot to {path} ({exc}): choose a writable -o path") from None


def _check_writable(path: Path) -> None:
    if not path.parent.exists():
        raise BadInput(f"-o {path}: directory {path.parent} does not exist")
    if path.is_dir():
        raise BadInput(f"-o {path} is a directory: give a file name like before.json")


@app.callback()
def verify(
    ctx: typer.Context,
    source_bootstrap: Optional[str] = typer.Option(None, "--source-bootstrap", help="Source cluster's bootstrap servers (two-cluster form)."),
    target_bootstrap: Optional[str] = typer.Option(None, "--target-bootstrap", help="Target cluster's bootstrap servers (two-cluster form)."),
    command_config: Optional[Path] = typer.Option(None, "--command-config", help="Kafka client settings (SASL/SSL) for both clusters."),
    source_command_config: Optional[Path] = typer.Option(None, "--source-command-config", help="Kafka client settings for the source only."),
    target_command_config: Optional[Path] = typer.Option(None, "--target-command-config", help="Kafka client settings for the target only."),
    topic: Optional[list[str]] = TOPIC_OPTION,
    include: Optional[str] = INCLUDE_OPTION,
    isolation_level: str = ISOLATION_OPTION,
    fail_on_tail: bool = FAIL_ON_TAIL_OPTION,
    master: str = MASTER_OPTION,
    spark_conf: Optional[list[str]] = SPARK_CONF_OPTION,
    jars: Optional[str] = JARS_OPTION,
    timeout_ms: int = TIMEOUT_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Compare two clusters (--source-bootstrap, --target-bootstrap), or use `snapshot` / `compare` on one cluster."""
    if ctx.invoked_subcommand is not None:
        given = [name for name, value in (("--source-bootstrap", source_bootstrap), ("--target-bootstrap", target_bootstrap),
                                          ("--topic", topic), ("--include", include), ("--jars", jars),
                                          ("--spark-conf", spark_conf), ("--command-config", command_config))
                 if value]
        if given or master != "local[*]":
            raise BadInput(f"{(given or ['--master'])[0]} goes after `verify {ctx.invoked_subcommand}`, not before it")
        return
    if not source_bootstrap or not target_bootstrap:
        raise BadInput("give both --source-bootstrap and --target-bootstrap to compare two clusters, "
                       "or use `kmigrate verify snapshot` / `kmigrate verify compare` on one cluster")
    from migrate.runner.verify import Scope, verify_clusters

    settings = _spark(master, spark_conf, jars, "kmigrate-verify-clusters")
    scope = Scope(_topics(topic), include)
    progress = _progress(output)
    source = _side(source_bootstrap, source_command_config or command_config, timeout_ms)
    target = _side(target_bootstrap, target_command_config or command_config, timeout_ms)
    with spark_session(settings, progress) as spark:
        report = verify_clusters(source, target, spark, scope, _now(), isolation_level, fail_on_tail, progress)
    _render(report, output)
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


@app.command("snapshot")
def snapshot(
    output_file: Path = typer.Option(..., "-o", "--output-file", help="Where to write the snapshot (JSON)."),
    bootstrap_server: str = typer.Option(..., "--bootstrap-server", help="Kafka bootstrap servers, host:port[,host:port]."),
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    topic: Optional[list[str]] = TOPIC_OPTION,
    include: Optional[str] = INCLUDE_OPTION,
    like: Optional[Path] = typer.Option(None, "--like", help="Read the partitions of this earlier snapshot, up to its ends (for `compare --against`)."),
    isolation_level: str = ISOLATION_OPTION,
    master: str = MASTER_OPTION,
    spark_conf: Optional[list[str]] = SPARK_CONF_OPTION,
    jars: Optional[str] = JARS_OPTION,
    timeout_ms: int = TIMEOUT_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Record counts and checksums of every partition (before a migration), into a JSON file."""
    from migrate.runner.verify import Scope, take_snapshot

    _check_writable(output_file)
    reference = read_snapshot(like) if like else None
    if reference is not None and (topic or include):
        raise BadInput("--like takes the partitions of the earlier snapshot: leave out --topic and --include")
    settings = _spark(master, spark_conf, jars, "kmigrate-verify-snapshot")
    progress = _progress(output)
    side = _side(bootstrap_server, command_config, timeout_ms)
    with spark_session(settings, progress) as spark:
        snap = take_snapshot(side, spark, Scope(_topics(topic), include), _now(), isolation_level, reference, progress)
    _write_snapshot(snap, output_file)
    summary = {"file": str(output_file), "cluster_id": snap.cluster_id, "taken_at": snap.taken_at,
               "topics": len(snap.topics), "partitions": len(snap.partitions), "records": snap.records,
               "offsets_read": sum(p.offsets_read for p in snap.partitions),
               "tail_records": sum(p.tail.records for p in snap.partitions)}
    if output == OutputFormat.json:
        emit_json(summary)
        return
    table = Table(title=f"Snapshot of cluster {snap.cluster_id} at {snap.taken_at}")
    for col in ("Topic", "Partitions", "Offsets read", "Records", "Compacted"):
        table.add_column(col, justify="left" if col == "Topic" else "right")
    for t in snap.topics:
        parts = [p for p in snap.partitions if p.topic == t]
        table.add_row(t, str(len(parts)), str(sum(p.offsets_read for p in parts)),
                      str(sum(p.digest.records for p in parts)), "yes" if parts[0].compacted else "")
    console.print(table)
    console.print(f"Wrote {output_file}: {summary['partitions']} partitions, {summary['records']} records "
                  f"(offsets {summary['offsets_read']}; a record count below the offset count means transaction "
                  "markers, aborted records or compaction).")


@app.command("compare")
def compare(
    before: Path = typer.Argument(..., help="Snapshot taken before (kmigrate verify snapshot -o)."),
    against: Optional[Path] = typer.Option(None, "--against", help="Compare with this later snapshot (taken with --like BEFORE) instead of the live cluster."),
    bootstrap_server: Optional[str] = typer.Option(None, "--bootstrap-server", help="The cluster now (default: the servers recorded in the snapshot)."),
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    save: Optional[Path] = typer.Option(None, "-o", "--output-file", help="Also write the snapshot taken now to this file."),
    fail_on_tail: bool = FAIL_ON_TAIL_OPTION,
    master: str = MASTER_OPTION,
    spark_conf: Optional[list[str]] = SPARK_CONF_OPTION,
    jars: Optional[str] = JARS_OPTION,
    timeout_ms: int = TIMEOUT_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Compare the cluster now (or a later snapshot) with a snapshot, partition by partition."""
    earlier = read_snapshot(before)
    if against is not None:
        if bootstrap_server or save:
            raise BadInput("--against compares two files: leave out --bootstrap-server and -o")
        report = compare_same(earlier, read_snapshot(against), fail_on_tail)
    else:
        from migrate.runner.verify import compare_with_cluster

        if save is not None:
            _check_writable(save)
        settings = _spark(master, spark_conf, jars, "kmigrate-verify-compare")
        progress = _progress(output)
        side = _side(bootstrap_server or earlier.bootstrap_servers, command_config, timeout_ms)
        with spark_session(settings, progress) as spark:
            after, report = compare_with_cluster(earlier, side, spark, _now(), fail_on_tail, progress)
        if save is not None:
            _write_snapshot(after, save)
    _render(report, output)
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


def _figures(p, side) -> str:
    if side is None:
        return "—"
    word = "keys" if side.compacted else "records"
    return (f"{side.digest.records} {word}, offsets {side.read_from}..{side.read_to}"
            + (f" (+{side.tail.records} tail)" if side.tail.records else ""))


def _render(report: Report, output: OutputFormat) -> None:
    if output == OutputFormat.json:
        emit_json(report.to_dict())
        return
    left, right = report.left.label, report.right.label
    console.print(f"[bold]{report.mode}[/bold] verification: {left} cluster {report.left.cluster_id} "
                  f"({report.left.taken_at}) vs {right} cluster {report.right.cluster_id} ({report.right.taken_at})")
    table = Table(title="Topics")
    for col in ("Topic", "Partitions", f"Records {left}", f"Records {right}", "Tail", "Result"):
        table.add_column(col, justify="left" if col in ("Topic", "Result") else "right")
    for row in report.topic_rows():
        status = "[green]match[/green]" if not row["differing_partitions"] else \
            f"[red]{row['differing_partitions']} partition(s) differ[/red]"
        table.add_row(row["topic"], str(row["partitions"]), str(row["left_records"]), str(row["right_records"]),
                      str(row["tail_records"] or ""), status)
    console.print(table)
    if report.differing:
        diff = Table(title="Differing partitions")
        for col in ("Partition", left, right, "What differs"):
            diff.add_column(col)
        for p in report.differing:
            diff.add_row(p.name, _figures(p, p.left), _figures(p, p.right), "; ".join(p.problems))
        console.print(diff)
    for p in report.partitions:
        for note in p.notes:
            console.print(f"[dim]{p.name}: {note}[/dim]")
    n = len(report.partitions)
    if report.ok:
        console.print(f"[green]OK[/green]: {len(report.topics)} topics, {n} partitions, "
                      f"{report.records('left')} records: every partition matches.")
    else:
        names = [p.name for p in report.differing]
        shown = ", ".join(names[:50]) + (f" and {len(names) - 50} more" if len(names) > 50 else "")
        console.print(f"[red]DIFFERENT[/red]: {len(report.differing)} of {n} partitions differ, in topics "
                      f"{', '.join(report.differing_topics)}: {shown}.", soft_wrap=True)
