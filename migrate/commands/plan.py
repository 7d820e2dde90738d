"""``kmigrate inspect``, ``kmigrate plan`` and ``kmigrate topics create``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from migrate.core.clientconfig import ClientSettings, translate
from migrate.files import client_settings, load_playbook
from migrate.files import zk_auth as zk_auth_from, zk_client_config, zk_jaas
from migrate.commands.common import ZK_CLIENT_CONFIG_OPTION, ZK_JAAS_FILE_OPTION, OUTPUT_OPTION, OutputFormat, console, emit_json, err_console, parse_id_list
from migrate.commands.options import (
    BOOTSTRAP_OPTION, COMMAND_CONFIG_OPTION, PLAYBOOK_OPTION, ZK_AUTH_FILE_OPTION, ZK_AUTH_OPTION, ZOOKEEPER_OPTION,
)
from migrate.errors import EXIT_FAILURE, BadInput
from migrate.core.plan.audit import versions_summary
from migrate.core.model import ClusterSnapshot, snapshot_from_json, snapshot_to_dict, snapshot_to_json
from migrate.core.plan.document import Plan, plan_to_dict, plan_to_json
from migrate.core.playbook import Playbook
from migrate.core.units import format_bytes, format_rate

topics_app = typer.Typer(help="Create topics with explicit, rack-aware assignments (off retiring brokers).",
                         no_args_is_help=True)


def resolve_connection(playbook: Playbook | None, bootstrap: str | None, zookeeper: str | None,
                       command_config: Path | None) -> tuple[ClientSettings, str | None]:
    """Kafka client settings and the ZooKeeper connect string, flags first, then the playbook."""
    extra: dict[str, str] = {}
    if playbook is not None:
        extra = {k: str(v) for k, v in playbook.kafka.client_settings().items() if k != "bootstrap.servers"}
        bootstrap = bootstrap or playbook.kafka.bootstrap_servers
        zookeeper = zookeeper or (playbook.zookeeper.connect if playbook.zookeeper is not None else None)
    settings = client_settings(bootstrap, command_config, extra)
    return settings, zookeeper


def _auth(text: str | None, sasl=None, tls=None) -> list | None:
    from migrate.core.zookeeper.auth import parse_auth

    return parse_auth(text, sasl, tls) or None


def read_snapshot(settings: ClientSettings, zookeeper: str | None, zk_auth: str | None, sizes: bool = True,
                  zk_sasl=None, zk_tls=None) -> ClusterSnapshot:
    """The cluster as the planner reads it; no ``zookeeper``: a KRaft cluster (refused if its brokers use ZooKeeper)."""
    from migrate.runner.inspect import inspect_cluster

    with console.status("inspecting the cluster") as status:
        return inspect_cluster(settings, zookeeper or None, _auth(zk_auth, zk_sasl, zk_tls), sizes=sizes,
                               progress=status.update)


def inspect(
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Write the cluster file here (what plan --cluster-file reads)."),
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    zookeeper: Optional[str] = ZOOKEEPER_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = ZK_JAAS_FILE_OPTION,
    zk_client_config_file: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    no_sizes: bool = typer.Option(False, "--no-sizes", help="Skip partition sizes (DescribeLogDirs)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Read the live cluster (ZooKeeper config, brokers, topics, configs, sizes) into a cluster file."""
    pb = load_playbook(playbook) if playbook else None
    settings, zk = resolve_connection(pb, bootstrap_server, zookeeper, command_config)
    snapshot = read_snapshot(settings, zk, zk_auth_from(zk_auth, zk_auth_file), sizes=not no_sizes,
                             zk_sasl=zk_jaas(zk_jaas_file), zk_tls=zk_client_config(zk_client_config_file))
    if out:
        out.write_text(snapshot_to_json(snapshot))
    if output == OutputFormat.json:
        emit_json(snapshot_to_dict(snapshot))
        return
    _print_snapshot(snapshot)
    if out:
        console.print(f"cluster file written to {out}")


def _print_snapshot(s: ClusterSnapshot) -> None:
    zk = s.zookeeper
    if not zk.connect:  # a KRaft cluster
        console.print(f"cluster {s.cluster_id}  KRaft (no ZooKeeper)")
    else:
        _print_ensemble(s)
    _print_brokers(s)


def _print_ensemble(s: ClusterSnapshot) -> None:
    zk = s.zookeeper
    console.print(f"cluster {s.cluster_id}  controller {s.controller_id}  "
                  f"ZooKeeper config version {hex(zk.config_version) if zk.config_version is not None else '?'}  "
                  f"reconfig {'enabled' if zk.reconfig_enabled else 'disabled' if zk.reconfig_enabled is False else 'unknown'}")
    table = Table("ZooKeeper", "address", "role", "mode", "version")
    for server in zk.servers:
        table.add_row(str(server.id), server.client_address, server.role, zk.server_modes.get(server.id, "?"),
                      zk.server_versions.get(server.id, "?"))
    console.print(table)


def _print_brokers(s: ClusterSnapshot) -> None:
    table = Table("broker", "address", "rack", "alive", "Kafka", "inter.broker.protocol")
    kraft = not s.zookeeper.connect  # KRaft brokers have no zookeeper.connect
    if not kraft:
        table.add_column("zookeeper.connect", overflow="fold")
    for b in s.brokers:
        row = [str(b.id), f"{b.host}:{b.port}", b.rack or "-", "yes" if b.alive else "NO", b.version or "?",
               b.protocol_version or "?"]
        table.add_row(*row, *([] if kraft else [b.zookeeper_connect or "?"]))
    console.print(table)
    versions = versions_summary(s)
    if versions:
        console.print(f"releases: {versions}", markup=False)
    parts = sum(len(t.partitions) for t in s.topics)
    size = sum(p.size_bytes or 0 for t in s.topics for p in t.partitions)
    console.print(f"{len(s.topics)} topics, {parts} partitions, {format_bytes(size)} (largest replica per partition)")


def plan(
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    cluster_file: Optional[Path] = typer.Option(None, "--cluster-file", help="Plan offline from a file written by kmigrate inspect."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Write the plan here (what zookeeper, partitions and verify read)."),
    reassignment_json: Optional[Path] = typer.Option(
        None, "--reassignment-json",
        help="Also write the moves as a kafka-reassign-partitions.sh file: run it with --execute, then with --verify "
        "(the same file) until done. Kafka 2.6 and later: --bootstrap-server; Kafka 2.4 and 2.5 need --zookeeper "
        "(their tool takes --bootstrap-server for neither --execute nor --verify); 3.0 and later removed --zookeeper."),
    from_reassignment_json: Optional[Path] = typer.Option(
        None, "--from-reassignment-json",
        help="Import the moves from a kafka-reassign-partitions.sh file (the one you would give its --execute and "
        "--verify, with --bootstrap-server from Kafka 2.6, --zookeeper on 2.4 and 2.5)."),
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    zookeeper: Optional[str] = ZOOKEEPER_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = ZK_JAAS_FILE_OPTION,
    zk_client_config_file: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    force: bool = typer.Option(False, "--force", help="Let forceable audit errors pass (never a degraded cluster)."),
    allow_merge: bool = typer.Option(False, "--allow-merge", help="Allow two old brokers to map to one new broker."),
    topics_shown: int = typer.Option(30, "--topics-shown", help="Topics listed on screen (largest first); the files have all."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Audit durability, plan every partition's target replicas and the ZooKeeper change, and print the runbook.

    Exit 0: no blocking finding; 1: the audit found errors that stop the migration (the plan is still written);
    2: bad input (nothing written).
    """
    from migrate.core.plan.planner import RESOLVED_LATER_IN_RUNBOOK, build_plan, plan_from_reassignment_json
    from migrate.core.plan.document import reassignment_json as to_reassignment_json

    if playbook is None and from_reassignment_json is None:
        raise BadInput("kmigrate plan needs --playbook FILE (copy one from playbooks/), or --from-reassignment-json FILE")
    pb = load_playbook(playbook) if playbook else None
    if cluster_file:
        try:
            text = cluster_file.read_text()
        except OSError as exc:
            raise BadInput(f"--cluster-file {cluster_file}: {exc.strerror or exc}") from None
        snapshot = snapshot_from_json(text, str(cluster_file))
    else:
        settings, zk = resolve_connection(pb, bootstrap_server, zookeeper, command_config)
        snapshot = read_snapshot(settings, zk, zk_auth_from(zk_auth, zk_auth_file), zk_sasl=zk_jaas(zk_jaas_file),
                                 zk_tls=zk_client_config(zk_client_config_file))
    plan_name = str(out) if out else "plan.json"
    if from_reassignment_json:
        try:
            text = from_reassignment_json.read_text()
        except OSError as exc:
            raise BadInput(f"--from-reassignment-json {from_reassignment_json}: {exc.strerror or exc}") from None
        kwargs = {}
        if pb is not None:
            kwargs = dict(throttle_bytes_per_s=pb.migration.throttle_bytes_per_s,
                          bookkeeping_topic=pb.migration.bookkeeping_topic,
                          max_partition_moves_per_broker=pb.migration.max_partition_moves_per_broker)
        result = plan_from_reassignment_json(text, snapshot, source=str(from_reassignment_json), plan_file=plan_name, **kwargs)
    else:
        assert pb is not None
        kraft_version = None
        if pb.controllers is not None and not cluster_file:  # a KRaft cluster's controllers move: static or dynamic?
            from migrate.runner.inspect import read_kraft_version

            kraft_version = read_kraft_version(settings)
        result = build_plan(snapshot, pb, allow_merge=allow_merge, plan_file=plan_name, kraft_version=kraft_version)
    if out:
        out.write_text(plan_to_json(result))
    if reassignment_json:
        reassignment_json.write_text(to_reassignment_json(result))
    if output == OutputFormat.json:
        emit_json(plan_to_dict(result))
    else:
        versions = versions_summary(snapshot)
        if versions:
            console.print(f"releases: {versions}", markup=False)
        print_plan(result, topics_shown)
        if out:
            console.print(f"plan written to {out}")
        if reassignment_json:
            console.print(f"reassignment file for kafka-reassign-partitions.sh written to {reassignment_json} "
                          "(--execute, then --verify with the same file; --bootstrap-server from Kafka 2.6, "
                          "--zookeeper on 2.4 and 2.5)", markup=False)
    later = [f for f in result.errors(force=force) if f.code in RESOLVED_LATER_IN_RUNBOOK]
    blocking = [f for f in result.errors(force=force) if f.code not in RESOLVED_LATER_IN_RUNBOOK]
    if later and not blocking:
        step = next((s.number for s in result.runbook[1:] if s.command == result.runbook[0].command), None)
        err_console.print(f"kmigrate: {len(later)} audit error(s) wait for a later runbook step: {later[0].message}; "
                          "kmigrate partitions refuses this plan until then"
                          + (f": make it again at step {step}" if step else ""), markup=False)
    if blocking:
        err_console.print(f"kmigrate: {len(blocking)} audit error(s) stop the migration: {blocking[0].message}"
                          + (" (and more above)" if len(blocking) > 1 else ""), markup=False)
        raise typer.Exit(EXIT_FAILURE)


def print_plan(p: Plan, topics_shown: int = 30) -> None:
    """The plan for a person: audit, ZooKeeper change, data to move, broker load, runbook."""
    console.rule(f"plan {p.plan_id}")
    style = {"error": "bold red", "warning": "yellow", "info": "cyan"}
    if p.findings:
        console.print("[bold]audit[/]")
        for f in p.findings:
            console.print(f"  [{style.get(f.severity, '')}]{f.severity}[/] {f.code} ({f.subject}): ", end="")
            console.print(f.message, markup=False)
    for w in p.warnings:
        console.print(f"[yellow]warning:[/] {w}", markup=True)
    if p.zookeeper is not None:
        z = p.zookeeper
        console.print(f"ZooKeeper: voters {list(z.voters_before)} -> {list(z.voters_after)}"
                      + ("  (already done)" if z.already_done else ""))
        console.print(f"  reconfig: {z.reconfig_command}", markup=False)
        console.print(f"  zookeeper.connect during: {z.connect_during}", markup=False)
        console.print(f"  zookeeper.connect after:  {z.connect_after}", markup=False)
    totals = sorted(p.topic_totals, key=lambda t: (-t.bytes_to_move, t.topic))
    moving = [t for t in totals if t.partitions_moved]
    table = Table("topic", "partitions", "moved", "bytes to move", title="data to move")
    for t in moving[:topics_shown]:
        table.add_row(t.topic, str(t.partitions), str(t.partitions_moved), format_bytes(t.bytes_to_move)
                      + (f" (+{t.unknown_sizes} unknown)" if t.unknown_sizes else ""))
    if len(moving) > topics_shown:
        table.add_row(f"... and {len(moving) - topics_shown} more topics", "", "", "")
    console.print(table)
    table = Table("broker", "role", "bytes in", "bytes out", "replicas before", "replicas after", "leaders after",
                  title="brokers after the move")
    for b in p.broker_totals:
        table.add_row(str(b.broker), b.role, format_bytes(b.bytes_in), format_bytes(b.bytes_out),
                      str(b.replicas_before), str(b.replicas_after), str(b.leaders_after))
    console.print(table)
    console.print(f"{len(p.moves)} partitions to move, {format_bytes(p.total_bytes)} in all; at "
                  f"{format_rate(p.throttle_bytes_per_s)} about {_duration(p.estimated_seconds)}")
    console.print("[bold]runbook[/]")
    for step in p.runbook:
        console.print(f"  {step.number:>2}. [bold]{step.actor}[/]: ", end="")
        console.print(step.command, markup=False)
        console.print(f"      {step.description}", markup=False)
        console.print(f"      check: {step.check}", markup=False)


def _duration(seconds: int) -> str:
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m} min" if h else f"{m} min {s} s" if m else f"{s} s"


@topics_app.command("create")
def topics_create(
    name: str = typer.Argument(..., help="Topic name."),
    partitions: int = typer.Option(..., "--partitions", help="Number of partitions."),
    replication_factor: int = typer.Option(..., "--replication-factor", help="Replicas per partition."),
    exclude_brokers: Optional[str] = typer.Option(None, "--exclude-brokers", help="Brokers to leave out, e.g. the retiring 1,2,3."),
    start_broker: Optional[int] = typer.Option(None, "--start-broker", help="Broker of partition 0's first replica."),
    config: list[str] = typer.Option([], "--config", help="Topic config name=value (repeatable)."),
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    rack_separator: str = typer.Option("/", "--rack-separator", help="Separator of availability and fault domain in broker.rack."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the assignment, create nothing."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Create a topic with explicit round-robin assignments across availability and fault domains."""
    from migrate.runner.topics import create_topic

    configs = {}
    for item in config:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--config {item!r}: expected name=value, like min.insync.replicas=2")
        configs[key.strip()] = value.strip()
    settings = client_settings(bootstrap_server, command_config)
    excluded = parse_id_list(exclude_brokers, "--exclude-brokers")
    placement = create_topic(settings, name, partitions, replication_factor, exclude_brokers=excluded,
                             start_broker=start_broker, separator=rack_separator, configs=configs, dry_run=dry_run)
    if output == OutputFormat.json:
        emit_json({"topic": name, "created": not dry_run, "assignments": placement.as_lists(),
                   "warnings": list(placement.warnings), "configs": configs})
        return
    for w in placement.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    table = Table("partition", "replicas (first = preferred leader)")
    for i, replicas in enumerate(placement.assignments):
        table.add_row(str(i), ",".join(map(str, replicas)))
    console.print(table)
    console.print(("would create " if dry_run else "created ") + f"topic {name} "
                  f"(kafka-topics.sh form: --replica-assignment {placement.replica_assignment})")
