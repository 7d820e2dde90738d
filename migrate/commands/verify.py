"""``kmigrate verify``: prove, partition by partition, that no record was lost or changed.

Same cluster, before and after a migration::

    kmigrate verify snapshot --bootstrap-server A -o before.json
    kmigrate partitions ...
    kmigrate verify compare before.json [--bootstrap-server A] [--against after.json]

Two clusters (a mirror-based migration)::

    kmigrate verify --source-bootstrap A --target-bootstrap B

Exit 0 when every partition matches, 1 when a difference is found, 2 for bad input.

Records removed by the topics' retention since the snapshot (or, across clusters, on one side only)
are reported as expired as configured, with their count, not as a difference; the report gives per
topic the records verified, expired, not verifiable and differing.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json, err_console
from migrate.core.verify.compare import Report, compare_same
from migrate.errors import EXIT_FAILURE, BadInput
from migrate.files import check_writable, read_snapshot, write_snapshot
from migrate.runner.verify import (Scope, SparkSettings, compare_with_cluster, kafka_side, records_in_scope,
                                   records_of, spark_session, spark_settings, take_snapshot, verify_clusters)

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


@dataclass(frozen=True)
class Engine:
    """The options every verify command ends with: how Spark runs, each Kafka request's timeout, the output."""

    master: str
    spark_conf: Optional[list[str]]
    jars: Optional[str]
    timeout_ms: int
    output: OutputFormat

    def spark(self, app_name: str) -> SparkSettings:
        return spark_settings(self.master, self.spark_conf, self.jars, app_name)

    def side(self, bootstrap: str, command_config: Optional[Path]):
        return kafka_side(bootstrap, command_config, self.timeout_ms)

    @staticmethod
    def progress(msg: str) -> None:
        err_console.print(f"[dim]verify: {msg}[/dim]")


_ENGINE_OPTIONS = (("master", str, MASTER_OPTION), ("spark_conf", Optional[list[str]], SPARK_CONF_OPTION),
                   ("jars", Optional[str], JARS_OPTION), ("timeout_ms", int, TIMEOUT_OPTION),
                   ("output", OutputFormat, OUTPUT_OPTION))


def _engine_options(command):
    """Give ``command`` the options of :class:`Engine` (last, in this order) in place of its ``engine`` argument."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "engine"]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
             for name, kind, option in _ENGINE_OPTIONS]

    @functools.wraps(command)
    def with_engine(**kwargs):
        engine = Engine(**{name: kwargs.pop(name) for name, _, _ in _ENGINE_OPTIONS})
        return command(engine=engine, **kwargs)

    with_engine.__signature__ = inspect.Signature(own + added, return_annotation=None)
    with_engine.__annotations__ = {p.name: p.annotation for p in own + added}
    return with_engine


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _topics(values: Optional[list[str]]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values or []:
        out.extend(t.strip() for t in v.split(",") if t.strip())
    return tuple(dict.fromkeys(out))


@app.callback()
@_engine_options
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
    allow_duplicates: bool = typer.Option(False, "--allow-duplicates", help="Accept records the target holds more than once (every source record present) as duplicates, not a difference: for an at-least-once copy such as MirrorMaker 1's. They are counted either way."),
    engine: Engine = None,
) -> None:
    """Compare two clusters (--source-bootstrap, --target-bootstrap), or use `snapshot` / `compare` on one cluster."""
    if ctx.invoked_subcommand is not None:
        given = [name for name, value in (("--source-bootstrap", source_bootstrap), ("--target-bootstrap", target_bootstrap),
                                          ("--topic", topic), ("--include", include), ("--jars", engine.jars),
                                          ("--spark-conf", engine.spark_conf), ("--command-config", command_config),
                                          ("--allow-duplicates", allow_duplicates))
                 if value]
        if given or engine.master != "local[*]":
            raise BadInput(f"{(given or ['--master'])[0]} goes after `verify {ctx.invoked_subcommand}`, not before it")
        return
    if not source_bootstrap or not target_bootstrap:
        raise BadInput("give both --source-bootstrap and --target-bootstrap to compare two clusters, "
                       "or use `kmigrate verify snapshot` / `kmigrate verify compare` on one cluster")
    settings = engine.spark("kmigrate-verify-clusters")
    scope = Scope(_topics(topic), include)
    source = engine.side(source_bootstrap, source_command_config or command_config)
    target = engine.side(target_bootstrap, target_command_config or command_config)
    with spark_session(settings, engine.progress, records_in_scope(source, scope, clusters=2)) as spark:
        report = verify_clusters(source, target, spark, scope, _now(), isolation_level, fail_on_tail, engine.progress,
                                 allow_duplicates=allow_duplicates)
    _render(report, engine.output)
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


@app.command("snapshot")
@_engine_options
def snapshot(
    output_file: Path = typer.Option(..., "--out", "-o", "--output-file", help="Where to write the snapshot (JSON)."),
    bootstrap_server: str = typer.Option(..., "--bootstrap-server", help="Kafka bootstrap servers, host:port[,host:port]."),
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    topic: Optional[list[str]] = TOPIC_OPTION,
    include: Optional[str] = INCLUDE_OPTION,
    like: Optional[Path] = typer.Option(None, "--like", help="Read the partitions of this earlier snapshot, up to its ends (for `compare --against`)."),
    isolation_level: str = ISOLATION_OPTION,
    engine: Engine = None,
) -> None:
    """Record counts and checksums of every partition (before a migration), into a JSON file."""
    check_writable(output_file)
    reference = read_snapshot(like) if like else None
    if reference is not None and (topic or include):
        raise BadInput("--like takes the partitions of the earlier snapshot: leave out --topic and --include")
    settings = engine.spark("kmigrate-verify-snapshot")
    side = engine.side(bootstrap_server, command_config)
    scope = Scope(_topics(topic), include)
    records = records_in_scope(side, scope) if reference is None else records_of(reference)
    with spark_session(settings, engine.progress, records) as spark:
        snap = take_snapshot(side, spark, scope, _now(), isolation_level, reference, engine.progress)
    write_snapshot(snap, output_file)
    summary = {"file": str(output_file), "cluster_id": snap.cluster_id, "taken_at": snap.taken_at,
               "topics": len(snap.topics), "partitions": len(snap.partitions), "records": snap.records,
               "offsets_read": sum(p.offsets_read for p in snap.partitions),
               "tail_records": sum(p.tail.records for p in snap.partitions)}
    if engine.output == OutputFormat.json:
        emit_json(summary)
        return
    rows = []
    for t in snap.topics:
        parts = [p for p in snap.partitions if p.topic == t]
        rows.append([t, str(len(parts)), str(sum(p.offsets_read for p in parts)),
                     str(sum(p.digest.records for p in parts)), "yes" if parts[0].compacted else ""])
    _table(f"Snapshot of cluster {snap.cluster_id} at {snap.taken_at}",
           ["Topic", "Partitions", "Offsets read", "Records", "Compacted"], rows)
    console.print(f"Wrote {output_file}: {summary['partitions']} partitions, {summary['records']} records "
                  f"(offsets {summary['offsets_read']}; a record count below the offset count means transaction "
                  "markers, aborted records or compaction).")


@app.command("compare")
@_engine_options
def compare(
    before: Path = typer.Argument(..., help="Snapshot taken before (kmigrate verify snapshot -o)."),
    against: Optional[Path] = typer.Option(None, "--against", help="Compare with this later snapshot (taken with --like BEFORE) instead of the live cluster."),
    bootstrap_server: Optional[str] = typer.Option(None, "--bootstrap-server", help="The cluster now (default: the servers recorded in the snapshot)."),
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    save: Optional[Path] = typer.Option(None, "--out", "-o", "--output-file", help="Also write the snapshot taken now to this file."),
    fail_on_tail: bool = FAIL_ON_TAIL_OPTION,
    engine: Engine = None,
) -> None:
    """Compare the cluster now (or a later snapshot) with a snapshot, partition by partition.

    Records that the topic's retention removed since the snapshot (cleanup.policy delete, older than retention.ms, or a partition at its retention.bytes) are reported as expired, not as a difference."""
    earlier = read_snapshot(before)
    if against is not None:
        if bootstrap_server or save:
            raise BadInput("--against compares two files: leave out --bootstrap-server and -o")
        report = compare_same(earlier, read_snapshot(against), fail_on_tail)
    else:
        if save is not None:
            check_writable(save)
        settings = engine.spark("kmigrate-verify-compare")
        side = engine.side(bootstrap_server or earlier.bootstrap_servers, command_config)
        with spark_session(settings, engine.progress, records_of(earlier)) as spark:
            after, report = compare_with_cluster(earlier, side, spark, _now(), fail_on_tail, engine.progress)
        if save is not None:
            write_snapshot(after, save)
    _render(report, engine.output)
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


def _figures(p, side) -> str:
    if side is None:
        return "—"
    word = "keys" if side.compacted else "records"
    return (f"{side.digest.records} {word}, offsets {side.read_from}..{side.read_to}"
            + (f" (+{side.tail.records} tail)" if side.tail.records else ""))


def _table(title: str, columns: list[str], rows: list[list[str]], identifiers: int = 1) -> None:
    """A rich table whose first ``identifiers`` columns (topic and partition names) are never cut; columns
    empty in every row are left out. When the console is too narrow for every identifier and value on one
    line, one plain line per row instead (``column: value``), which shows whole at any width."""
    from rich.text import Text

    keep = [i for i in range(len(columns)) if i < identifiers or any(r[i] for r in rows)]
    columns, rows = [columns[i] for i in keep], [[r[i] for i in keep] for r in rows]

    def width(i: int) -> int:  # text columns fold (never cut): 24 cells of them are enough to read
        head = max(len(w) for w in columns[i].split())
        need = max([head] + [Text.from_markup(r[i]).cell_len for r in rows])
        return need if i < identifiers else min(need, 24)

    identifier_width = max([width(i) for i in range(identifiers)])
    fits = console.width >= sum(width(i) for i in range(len(columns))) + 3 * len(columns) + 1
    if not fits and len(columns) > identifiers:
        console.print(f"{title}:")
        for r in rows:
            console.print("  " + ", ".join(f"{c}: {v}" if i >= identifiers else v
                                           for i, (c, v) in enumerate(zip(columns, r)) if v != ""), soft_wrap=True)
        return
    table = Table(title=title)
    for i, col in enumerate(columns):
        if i < identifiers:
            table.add_column(col, overflow="fold", min_width=identifier_width)
        else:
            table.add_column(col, overflow="fold", justify="left" if col in ("Result", "What differs") else "right")
    for r in rows:
        table.add_row(*r)
    console.print(table)


def _render(report: Report, output: OutputFormat) -> None:
    if output == OutputFormat.json:
        emit_json(report.to_dict())
        return
    left, right = report.left.label, report.right.label
    console.print(f"[bold]{report.mode}[/bold] verification: {left} cluster {report.left.cluster_id} "
                  f"({report.left.taken_at}) vs {right} cluster {report.right.cluster_id} ({report.right.taken_at})")
    rows = []
    for row in report.topic_rows():
        status = "[green]match[/green]" if not row["differing_partitions"] else \
            f"[red]{row['differing_partitions']} partition(s) differ[/red]"
        rows.append([row["topic"], str(row["partitions"]), str(row["left_records"]), str(row["right_records"]),
                     str(row["verified_records"]), str(row["expired_records"] or ""),
                     str(row["unverifiable_records"] or ""), str(row["differing_records"] or ""),
                     str(row["tail_records"] or ""), status])
    _table("Topics", ["Topic", "Partitions", f"Records {left}", f"Records {right}", "Verified", "Expired",
                      "Unverifiable", "Differing", "Tail", "Result"], rows)
    if report.differing:
        _table("Differing partitions", ["Partition", left, right, "What differs"],
               [[p.name, _figures(p, p.left), _figures(p, p.right), "; ".join(p.problems)] for p in report.differing])
    for p in report.partitions:
        for note in p.notes:
            console.print(f"[dim]{p.name}: {note}[/dim]", soft_wrap=True)
    n = len(report.partitions)
    expired = sum(p.expired for p in report.partitions)
    unverifiable = sum(p.unverifiable for p in report.partitions)
    duplicates = sum(p.duplicates for p in report.partitions)
    extra = (f", {expired} expired as configured" if expired else "") + \
        (f", {unverifiable} not verifiable (chunks straddling a new log start)" if unverifiable else "") + \
        (f", {duplicates} copied more than once on the {right} (duplicates, not a loss; --allow-duplicates)"
         if duplicates and report.allow_duplicates else "")
    if report.ok:
        console.print(f"[green]OK[/green]: {len(report.topics)} topics, {n} partitions, "
                      f"{sum(p.verified for p in report.partitions)} records verified{extra}: "
                      "every partition matches.", soft_wrap=True)
    else:
        names = [p.name for p in report.differing]
        shown = ", ".join(names[:50]) + (f" and {len(names) - 50} more" if len(names) > 50 else "")
        console.print(f"[red]DIFFERENT[/red]: {len(report.differing)} of {n} partitions differ, in topics "
                      f"{', '.join(report.differing_topics)}: {shown}{extra}.", soft_wrap=True)
