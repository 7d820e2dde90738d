"""``kmigrate kraft``: ZooKeeper mode to KRaft (KIP-866): where the migration stands, and each step's config.

    kmigrate kraft status --zookeeper zk1:2181/kafka --bootstrap-server kafka1:9092
    kmigrate kraft controller-config 3000 --zookeeper zk1:2181/kafka --bootstrap-server kafka1:9092 \\
        --controller-quorum-voters 3000@c1:9093,3001@c2:9093,3002@c3:9093
    kmigrate kraft broker-config 1 --phase migration --zookeeper zk1:2181/kafka --bootstrap-server kafka1:9092 \\
        --controller-quorum-voters 3000@c1:9093,3001@c2:9093,3002@c3:9093

The controllers come from ``--controller-quorum-voters`` (Kafka's own syntax) or the playbook's ``kraft:`` section.
Broker settings are read from the brokers (DescribeConfigs: passwords and JAAS come back hidden, marked for the
operator to copy) or, whole, from ``--broker-properties`` (a broker's server.properties).
"""

from __future__ import annotations

import shlex
from contextlib import contextmanager
from pathlib import Path
from typing import List, Optional

import typer

from migrate.commands.common import (
    OUTPUT_OPTION, ZK_CLIENT_CONFIG_OPTION, ZK_JAAS_FILE_OPTION, OutputFormat, console, emit_json, err_console,
    parse_id_list,
)
from migrate.commands.options import COMMAND_CONFIG_OPTION, PLAYBOOK_OPTION, ZK_AUTH_FILE_OPTION, ZK_AUTH_OPTION
from migrate.core.playbook import DEFAULT_METADATA_LOG_DIR
from migrate.commands.kraft.connect import (
    BOOTSTRAP_CONTROLLER_OPTION, BOOTSTRAP_OPTION, BROKER_LIST_OPTION, BROKER_PROPERTIES_OPTION,
    CONTROLLER_COMMAND_CONFIG_OPTION, VOTERS_OPTION, ZOOKEEPER_OPTION, connection, controller_settings, parse_voters,
)
from migrate.errors import EXIT_FAILURE, BadInput

app = typer.Typer(help="ZooKeeper mode to KRaft (KIP-866): the migration's phase, and each step's config.",
                  no_args_is_help=True)

def _controllers(pb, voters: Optional[str], metadata_log_dir: Optional[str]) -> tuple[tuple, dict]:
    """The controllers and the other KraftInputs options (listener name, protocol) from the flags or the playbook."""
    from dataclasses import replace

    from migrate.core.kraft.config import DEFAULT_METADATA_DIR, Controller

    options: dict = {}
    if voters:
        controllers = parse_voters(voters)
        log_dir = metadata_log_dir or DEFAULT_METADATA_DIR
    elif pb is not None and pb.kraft is not None:
        k = pb.kraft
        log_dir = metadata_log_dir or k.metadata_log_dir
        controllers = tuple(Controller(c.id, c.host, c.port) for c in k.controllers)
        options = {"listener_name": k.listener_name, "controller_protocol": k.security_protocol}
    else:
        raise BadInput("no controllers given: use --controller-quorum-voters id@host:port,... or a playbook with a kraft: section")
    return tuple(replace(c, log_dir=log_dir) for c in controllers), options


def _broker_files(paths: Optional[List[Path]]) -> dict[int, dict[str, str]]:
    import javaproperties

    from migrate.files import read_text

    out: dict[int, dict[str, str]] = {}
    for path in paths or []:
        props = dict(javaproperties.loads(read_text(path, "--broker-properties")))
        ident = (props.get("broker.id") or props.get("node.id") or "").strip()
        if not ident.isdigit():
            raise BadInput(f"--broker-properties {path}: no broker.id in it; give a ZooKeeper-mode broker's server.properties")
        out[int(ident)] = props
    return out


def _inputs(playbook, zookeeper, bootstrap_server, command_config, zk_auth, zk_auth_file, zk_jaas_file,
            zk_client_config_file, voters, metadata_log_dir, broker_properties):
    from migrate.runner.kraft.observe import read_inputs

    pb, connect, settings, auth = connection(playbook, zookeeper, bootstrap_server, command_config, zk_auth,
                                              zk_auth_file, zk_jaas_file, zk_client_config_file)
    controllers, options = _controllers(pb, voters, metadata_log_dir)
    return read_inputs(connect, auth, controllers, settings, _broker_files(broker_properties), **options)


def _finalize_inputs(playbook, zookeeper, bootstrap_server, command_config, controller_command_config, zk_auth,
                     zk_auth_file, zk_jaas_file, zk_client_config, voters, metadata_log_dir):
    """The inputs of a finalized controller config, once the cluster shows every broker KRaft (BadInput naming the
    brokers left behind otherwise: KAFKA-20960). The finalized config needs no broker setting: none is read."""
    from migrate.core.kraft.config import KraftInputs
    from migrate.core.kraft.gates import finalize_refusal
    from migrate.runner.kraft.gates import OfflinePartitions
    from migrate.runner.kraft.observe import observe

    pb, connect, settings, auth = connection(playbook, zookeeper, bootstrap_server, command_config, zk_auth,
                                              zk_auth_file, zk_jaas_file, zk_client_config)
    controllers, options = _controllers(pb, voters, metadata_log_dir)
    addresses = tuple(c.address for c in controllers)
    csettings = controller_settings(pb, command_config, controller_command_config, addresses, settings)
    obs = observe(connect, auth, settings, controllers=addresses, controller_settings=csettings)
    refusal = finalize_refusal(obs, OfflinePartitions(settings)(), addresses)
    if refusal:
        raise BadInput(refusal)
    if not obs.cluster_id:
        raise BadInput("no cluster id in /cluster/id: check the chroot of --zookeeper (the brokers' zookeeper.connect)")
    return KraftInputs(obs.cluster_id, {}, controllers, **options)


def _emit(output: OutputFormat, props: dict[str, str], title: str, doc: dict, extra: list[str] = ()) -> None:
    from migrate.core.kraft.config import lines

    if output == OutputFormat.json:
        emit_json({"config": props, "lines": lines(props), **doc})
        return
    console.print(f"# {title}", markup=False)
    for line in lines(props):
        console.print(line, markup=False, soft_wrap=True)
    for line in extra:
        console.print(line, markup=False, soft_wrap=True)


# ---------------------------------------------------------------- commands
@app.command("status")
def status(
    zookeeper: Optional[str] = ZOOKEEPER_OPTION,
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    bootstrap_controller: Optional[str] = BOOTSTRAP_CONTROLLER_OPTION,
    controller_command_config: Optional[Path] = CONTROLLER_COMMAND_CONFIG_OPTION,
    broker_list: Optional[str] = BROKER_LIST_OPTION,
    wait_for: Optional[str] = typer.Option(
        None, "--wait-for", help="Wait at a gate until its checks hold, then exit 0 (1 at --timeout, saying what it waits "
                                 "for): controllers-ready (after the controllers start), dual-write (after roll 1), "
                                 "brokers-kraft (after roll 2), finalized (after the controller roll)."),
    timeout: str = typer.Option("10m", "--timeout", help="With --wait-for: how long to wait (30s, 10m, 1h)."),
    interval: str = typer.Option("2s", "--interval", help="With --wait-for: time between two readings."),
    check_count: int = typer.Option(3, "--check-count", help="With --wait-for: passing readings in a row that count."),
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = ZK_JAAS_FILE_OPTION,
    zk_client_config: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """The migration's phase, each broker's mode, the quorum leader and /migration's offset (read from ZooKeeper and DescribeQuorum); with --wait-for, the gate between two steps. Once ZooKeeper is retired (stopped, or not given) it reads the quorum, the controllers' migration flag and the brokers: finalized, or exit 1 (the phases before finalize need ZooKeeper)."""
    from migrate.core.kraft.gates import Gate, parse_gate
    from migrate.core.kraft.phases import phase_of
    from migrate.core.units import parse_duration
    from migrate.runner.kraft.observe import observe

    gate = None
    if wait_for is not None:
        gate = parse_gate(wait_for)
        if gate is None:
            raise BadInput(f"--wait-for {wait_for!r}: choose one of {', '.join(g.value for g in Gate)}")
        timeout_s, interval_s = parse_duration(timeout, "--timeout"), parse_duration(interval, "--interval")
        if check_count < 1:
            raise BadInput(f"--check-count {check_count}: give 1 or more passing readings in a row")
    pb, connect, settings, auth = connection(playbook, zookeeper, bootstrap_server, command_config, zk_auth,
                                              zk_auth_file, zk_jaas_file, zk_client_config, zookeeper_optional=True)
    controllers = tuple(a.strip() for a in (bootstrap_controller or "").split(",") if a.strip())
    if not controllers and pb is not None and pb.kraft is not None:
        controllers = tuple(c.address for c in pb.kraft.controllers)
    if connect is None:  # ZooKeeper retired: what the quorum and the brokers show tells a finalized cluster only
        if settings is None and not controllers:
            raise BadInput("nothing to read: give --zookeeper host:port/chroot (the brokers' zookeeper.connect), "
                           "--bootstrap-server or --bootstrap-controller, or --playbook")
        if gate in (Gate.DUAL_WRITE, Gate.BROKERS_KRAFT):
            raise BadInput(f"--wait-for {gate.value} is read in ZooKeeper: give --zookeeper host:port/chroot (the "
                           "brokers' zookeeper.connect) or a playbook with a zookeeper: section")
    csettings = controller_settings(pb, command_config, controller_command_config, controllers, settings)
    known = parse_id_list(broker_list, "--broker-list")
    if gate is None:
        from migrate.core.kraft.phases import ZOOKEEPER_NOT_GIVEN, Phase

        obs = observe(connect, auth, settings, known, controllers=controllers, controller_settings=csettings,
                      zookeeper_optional=True)
        reading = phase_of(obs)
        if reading.phase is Phase.UNKNOWN and obs.zookeeper_unread == ZOOKEEPER_NOT_GIVEN:
            raise BadInput(f"{reading.detail}; give --zookeeper host:port/chroot (the brokers' zookeeper.connect)")
        _print_status(obs, reading, output)
        if reading.phase is Phase.UNKNOWN:  # ZooKeeper down before finalize: the cluster is in trouble, not the input
            raise typer.Exit(EXIT_FAILURE)
        return
    from migrate.runner.kraft.gates import reader, wait_for_gate

    with _gate_view(output) as on_check:
        watch = wait_for_gate(reader(connect, auth, settings, gate, known, controllers, csettings,
                                     zookeeper_optional=True), gate,
                              timeout_s=timeout_s, interval_s=interval_s, check_count=check_count,
                              controllers=controllers, on_check=on_check)
    _print_status(watch.last_observation, watch.last.phase, output, gate={
        "gate": gate.value, "passed": watch.passed, "checks": watch.checks, "consecutive": watch.consecutive,
        "check_count": check_count, "timeout_s": timeout_s, "waiting_for": list(watch.missing),
        "past": watch.last.past, "summary": watch.summary()})
    if not watch.passed:
        raise typer.Exit(EXIT_FAILURE)


def _print_status(obs, reading, output: OutputFormat, gate: dict | None = None) -> None:
    from migrate.core.kraft.gates import waiting_reasons

    q = obs.quorum
    reasons = {b: why for b, why in waiting_reasons(obs).items()} if q is not None and q.has_leader else {}
    doc = {
        "phase": reading.phase.value,
        "detail": reading.detail,
        "waiting_for": list(reading.waiting_for),
        "waiting_reasons": {str(b): reasons[b] for b in reading.waiting_for if b in reasons},
        "brokers": {str(b): m for b, m in reading.broker_modes(obs.brokers).items()},
        "cluster_id": obs.cluster_id,
        "quorum": None if q is None else {"leader_id": q.leader_id, "leader_epoch": q.leader_epoch,
                                          "high_watermark": q.high_watermark, "voters": list(q.voters),
                                          "observers": list(q.observers), "voter_lag": {str(k): v for k, v in q.voter_lag.items()}},
        "controllers_migration_flag": {str(k): v for k, v in obs.controller_migration.items()},
        "zookeeper": None if obs.zookeeper_unread is not None else {
            "brokers_ids": list(obs.zk_broker_ids), "controller": obs.controller,
            "controller_epoch": obs.controller_epoch, "migration": obs.migration,
            "kraft_controller_epoch": obs.kraft_controller_epoch, "migration_offset": obs.migration_offset},
        # why the zookeeper part is null: {"reason": "not reachable" | "not given", "connect": tried or null,
        # "needed": whether the phase needs it (false once finalized)}
        "zookeeper_not_read": None if obs.zookeeper_unread is None else {
            "reason": obs.zookeeper_unread, "connect": obs.zookeeper_connect,
            "needed": reading.phase.value != "finalized"},
        "brokers_modes_read": {str(b): m for b, m in sorted(obs.broker_modes_read.items())},
    }
    if gate is not None:
        doc["gate"] = gate
    if output == OutputFormat.json:
        emit_json(doc)
        return
    console.print(f"phase: {reading.phase.value}: {reading.detail}", markup=False, soft_wrap=True)
    for b in reading.waiting_for:
        if b in reasons:
            console.print(f"  waiting for broker {b}: {reasons[b]}", markup=False, soft_wrap=True)
    console.print("brokers: " + (", ".join(f"{b} {m}" for b, m in reading.broker_modes(obs.brokers).items()) or "none"),
                  markup=False)
    console.print("quorum: " + ("no controller answers" if q is None else
                               f"leader {q.leader_id} (epoch {q.leader_epoch}), high watermark {q.high_watermark}, "
                               f"voters {list(q.voters)}, observers {list(q.observers)}"), markup=False)
    if obs.controller_migration:
        console.print("controllers: " + ", ".join(f"{c} {'with' if on else 'without'} the migration flag"
                                                  for c, on in sorted(obs.controller_migration.items())), markup=False)
    if obs.zookeeper_unread is None:
        console.print(f"ZooKeeper: /controller {obs.controller}, /controller_epoch {obs.controller_epoch}, "
                      f"/migration offset {obs.migration_offset}", markup=False)
    else:
        console.print(f"ZooKeeper: not read ({obs.zookeeper_why}): " + (
            "finalized, nothing needs it any more (it can be retired)" if reading.phase.value == "finalized" else
            "the phases before finalize are read there (/controller, /migration, /brokers/ids)"),
            markup=False, soft_wrap=True)
    if gate is not None:
        passed = gate["passed"]
        console.print(f"gate {gate['gate']}: " + ("passed" + (" (the migration is already past it)" if gate["past"] else "")
                                                  if passed else f"NOT passed after {gate['timeout_s']:g} s; waiting for "
                                                  + "; ".join(gate["waiting_for"])),
                      style="green" if passed else "red", markup=False, soft_wrap=True)


@contextmanager
def _gate_view(output: OutputFormat):
    """Progress of a wait on stderr (stdout keeps the result): one line per reading whose summary changed, and one at
    least every 30 s."""
    state = {"last": None, "at": -1e9}

    def show(p) -> None:
        line = p.watch.summary()
        if line != state["last"] or p.elapsed_s - state["at"] >= 30:
            err_console.print(f"reading {p.number} ({p.elapsed_s:.0f} s): {line}", markup=False, soft_wrap=True)
            state["last"], state["at"] = line, p.elapsed_s

    yield show


@app.command("controller-config")
def controller_config(
    controller_id: int = typer.Argument(..., help="The controller's node.id."),
    zookeeper: Optional[str] = ZOOKEEPER_OPTION,
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    controller_quorum_voters: Optional[str] = VOTERS_OPTION,
    metadata_log_dir: Optional[str] = typer.Option(None, "--metadata-log-dir", help=f"The controller's log.dirs (default: the playbook's, else {DEFAULT_METADATA_LOG_DIR})."),
    broker_properties: Optional[List[Path]] = BROKER_PROPERTIES_OPTION,
    config_file: str = typer.Option("config/kraft/controller.properties", "--config-file",
                                    help="Where the controller's properties go on its host (named in the format command)."),
    kafka_bin: str = typer.Option("bin", "--kafka-bin", help="Kafka's bin directory on the controller's host."),
    finalize: bool = typer.Option(False, "--finalize", help="The config after finalize: no migration flag, no ZooKeeper "
                                  "(no way back to ZooKeeper once the controllers run it). Refused (exit 2) unless "
                                  "every broker is a KRaft broker seen by the quorum and no partition is offline, read "
                                  "from the cluster (ZooKeeper, the controllers, --bootstrap-server)."),
    controller_command_config: Optional[Path] = CONTROLLER_COMMAND_CONFIG_OPTION,
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = ZK_JAAS_FILE_OPTION,
    zk_client_config: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """A new controller's server.properties (the migration flag, zookeeper.connect and its security, the quorum) and its kafka-storage format command with the cluster id read from ZooKeeper."""
    from migrate.core.kraft import config as kc

    if finalize:
        inputs = _finalize_inputs(playbook, zookeeper, bootstrap_server, command_config, controller_command_config,
                                  zk_auth, zk_auth_file, zk_jaas_file, zk_client_config, controller_quorum_voters,
                                  metadata_log_dir)
    else:
        inputs = _inputs(playbook, zookeeper, bootstrap_server, command_config, zk_auth, zk_auth_file, zk_jaas_file,
                         zk_client_config, controller_quorum_voters, metadata_log_dir, broker_properties)
    props = kc.controller_finalized_config(inputs, controller_id) if finalize else kc.controller_config(inputs, controller_id)
    command = kc.format_command(inputs.cluster_id, config_file, kafka_bin)
    notes = [] if finalize else kc.controller_notes(inputs)
    hidden = kc.hidden(props)
    if hidden:
        notes.append(f"hidden by the brokers (DescribeConfigs), copy from a broker's server.properties or give "
                     f"--broker-properties: {', '.join(hidden)}")
    extra = ["", "# format its metadata log dir once, before its first start:", shlex.join(command)] if not finalize else [
        "", "# the point of no return: after this roll the cluster cannot go back to ZooKeeper"]
    _emit(output, props, f"controller {controller_id}" + (" (finalized)" if finalize else " (ZooKeeper migration)"),
          {"format_command": command, "cluster_id": inputs.cluster_id, "notes": notes},
          extra + [f"# note: {n}" for n in notes])


@app.command("broker-config")
def broker_config(
    broker_id: int = typer.Argument(..., help="The broker's broker.id (its node.id in KRaft)."),
    phase: str = typer.Option(..., "--phase", help="migration (roll 1: the lines to add) or kraft (roll 2: the whole KRaft config)."),
    full: bool = typer.Option(False, "--full", help="With --phase migration: the whole config, not only the lines to add."),
    zookeeper: Optional[str] = ZOOKEEPER_OPTION,
    bootstrap_server: Optional[str] = BOOTSTRAP_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    controller_quorum_voters: Optional[str] = VOTERS_OPTION,
    broker_properties: Optional[List[Path]] = BROKER_PROPERTIES_OPTION,
    zk_auth: Optional[str] = ZK_AUTH_OPTION,
    zk_auth_file: Optional[Path] = ZK_AUTH_FILE_OPTION,
    zk_jaas_file: Optional[Path] = ZK_JAAS_FILE_OPTION,
    zk_client_config: Optional[Path] = ZK_CLIENT_CONFIG_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """A broker's config for roll 1 (--phase migration: the lines it adds) or roll 2 (--phase kraft: its KRaft config)."""
    from migrate.core.kraft import config as kc

    if phase not in ("migration", "kraft"):
        raise BadInput(f"--phase {phase!r}: choose migration (roll 1) or kraft (roll 2)")
    inputs = _inputs(playbook, zookeeper, bootstrap_server, command_config, zk_auth, zk_auth_file, zk_jaas_file,
                     zk_client_config, controller_quorum_voters, None, broker_properties)
    if phase == "migration":
        props = kc.broker_migration_config(inputs, broker_id) if full else kc.broker_migration_settings(inputs, broker_id)
        title = f"broker {broker_id}, roll 1: " + ("its whole config" if full else "add these lines, keep the rest")
        removed: list[str] = []
    else:
        props = kc.broker_kraft_config(inputs, broker_id)
        removed = kc.removed_in_kraft(inputs.broker(broker_id))
        title = f"broker {broker_id}, roll 2: its whole KRaft config"
    extra = [f"# removed: {', '.join(removed)}"] if removed else []
    hidden = kc.hidden(props)
    if hidden:
        extra.append(f"# hidden by the broker, copy from its server.properties: {', '.join(hidden)}")
    _emit(output, props, title, {"phase": phase, "removed": removed, "hidden": hidden}, extra)


# phase 0, in a module of its own (kmigrate kraft precheck --playbook FILE)
from migrate.commands.kraft.precheck import precheck  # noqa: E402

app.command("precheck")(precheck)

# the way back before finalize, in a module of its own (kmigrate kraft rollback)
from migrate.commands.kraft.rollback import rollback  # noqa: E402

app.command("rollback")(rollback)
