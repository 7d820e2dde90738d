"""``kmigrate controllers``: move a KRaft controller quorum to new machines (KIP-853), one voter change at a time.

    kmigrate controllers controller-config 7 --bootstrap-controller c1:9093 --host c7
    kmigrate controllers --add 7,8,9 --remove 1,2,3 --bootstrap-controller c1:9093,c2:9093,c3:9093 \\
        --bootstrap-server kafka1:9092 --kafka-version 4.1

The new controllers are started first as observers (``controller-config`` prints each one's properties and the
``kafka-storage format ... --no-initial-controllers`` command). The move then adds one new controller, removes one
old one (followers first, the leader last), and so on, each change confirmed in the voter set before the next;
run again after any interruption, it goes on from what the quorum shows.

A static quorum (``controller.quorum.voters``, ``kraft.version`` 0) is made dynamic first, on Kafka 4.1+:

    kmigrate controllers upgrade-kraft-version --bootstrap-controller c1:9093 --bootstrap-server kafka1:9092
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import List, Optional

import typer

from migrate.commands.common import (OUTPUT_OPTION, OutputFormat, console, emit_json, emit_json_line, err_console,
                                     parse_id_list)
from migrate.commands.options import COMMAND_CONFIG_OPTION
from migrate.commands.kraft.connect import CONTROLLER_COMMAND_CONFIG_OPTION
from migrate.errors import BadInput

app = typer.Typer(help="Move a KRaft controller quorum to new machines (KIP-853): new controllers join as observers, "
                       "then one AddRaftVoter and one RemoveRaftVoter at a time.")

BOOTSTRAP_CONTROLLER = typer.Option(None, "--bootstrap-controller", envvar="KAFKA_BOOTSTRAP_CONTROLLERS",
                                    help="The controllers' controller listeners, host:port[,...] (any of them: the "
                                         "leader is found from there).")
BOOTSTRAP_SERVER = typer.Option(None, "--bootstrap-server", envvar="KAFKA_BOOTSTRAP_SERVERS",
                                help="Kafka brokers: their controller.quorum.bootstrap.servers is checked before the "
                                     "first change, and a new controller id may not be a broker id.")
KAFKA_VERSION = typer.Option(None, "--kafka-version", help="The controllers' Kafka release (3.9, 4.0, 4.1, ...): it "
                                                           "decides whether an old controller is stopped before or after "
                                                           "its removal (unknown: before, the safe order).")


def _release(text: Optional[str]) -> tuple[int, int] | None:
    if not text:
        return None
    parts = text.strip().split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise BadInput(f"--kafka-version {text!r}: give the controllers' release, like 3.9 or 4.1.1") from None


def _addresses(text: Optional[str]) -> tuple[str, ...]:
    from migrate.core.units import split_host_port

    if not text or not text.strip():
        raise BadInput("no controller to ask: give --bootstrap-controller host:port[,host:port...] (the controllers' "
                       "controller listeners)")
    out = tuple(a.strip() for a in text.split(",") if a.strip())
    for a in out:
        split_host_port(a, 9093, "--bootstrap-controller")
    return out


def parse_adds(values: Optional[List[str]], listener: str) -> tuple:
    """``--add`` values: ids (``7,8,9``, ``7-9``), or ``id=host:port`` where the new controller is not registered."""
    from migrate.core.controllers.plan import NewController
    from migrate.core.units import split_host_port

    out: list = []
    for value in values or []:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            if "=" in item:
                node, _, address = item.partition("=")
                try:
                    node_id = int(node)
                except ValueError:
                    raise BadInput(f"--add {item!r}: expected id=host:port, like 7=c7:9093") from None
                host, port = split_host_port(address, 9093, "--add")
                out.append(NewController(node_id, host, port, listener))
            else:
                out.extend(parse_id_list(item, "--add"))
    return tuple(out)


def _settings(addresses: tuple[str, ...], command_config: Optional[Path], controller_command_config: Optional[Path],
              book=None):
    """The controller listener's client settings: ``--controller-command-config``, else ``--command-config``, else the
    playbook's kafka client settings (its ``command_config`` file and ``client:``); None: PLAINTEXT."""
    from migrate.files import client_settings

    config = controller_command_config or command_config
    if config is not None:
        return client_settings(",".join(addresses), config)
    extra = {k: str(v) for k, v in book.kafka.client_settings().items() if k != "bootstrap.servers"} if book else {}
    return client_settings(",".join(addresses), None, extra) if extra else None


def _playbook(path: Optional[Path]):
    """The playbook's ``controllers:`` section and the playbook (None, None without ``--playbook``)."""
    if path is None:
        return None, None
    from migrate.files import load_playbook

    book = load_playbook(path)
    if book.controllers is None:
        raise BadInput(f"playbook {path} has no controllers: section: kmigrate controllers moves a KRaft controller "
                       "quorum; add controllers: {voters: [...], add: [...], remove: [...]} or give --add, --remove "
                       "and --bootstrap-controller")
    return book, book.controllers


def _from_playbook(section, add: Optional[List[str]], remove: Optional[List[str]], bootstrap_controller: Optional[str],
                   listener: Optional[str]):
    """(--add, --remove, --bootstrap-controller, --controller-listener) with the playbook's ``controllers:`` section
    under the flags: its new controllers with their endpoints, its removals, its current and new controllers (any may
    be the leader, before, during or after the move) and its listener name. A flag given wins."""
    if section is None:
        return add, remove, bootstrap_controller, listener
    adds = add or ([",".join(f"{c.id}={c.address}" for c in section.add)] if section.add else None)
    removes = remove or ([",".join(str(i) for i in section.remove)] if section.remove else None)
    return adds, removes, bootstrap_controller or section.bootstrap_during, listener or section.listener_name


@app.callback(invoke_without_command=True)
def controllers(
    ctx: typer.Context,
    add: Optional[List[str]] = typer.Option(None, "--add", help="New controllers (node.id), started as observers: "
                                                                "7,8,9, or 7=host:port where one is not registered."),
    remove: Optional[List[str]] = typer.Option(None, "--remove", help="Voters that leave, e.g. 1,2,3."),
    playbook: Optional[Path] = typer.Option(None, "--playbook", "-p",
                                            help="Playbook YAML with a controllers: section (voters, add, remove) and "
                                                 "kafka: settings; flags given win over it."),
    bootstrap_controller: Optional[str] = BOOTSTRAP_CONTROLLER,
    bootstrap_server: Optional[str] = BOOTSTRAP_SERVER,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    controller_command_config: Optional[Path] = CONTROLLER_COMMAND_CONFIG_OPTION,
    kafka_version: Optional[str] = KAFKA_VERSION,
    auto_join: bool = typer.Option(False, "--auto-join", help="The old controllers run with "
                                                              "controller.quorum.auto.join.enable=true (4.2+): each is "
                                                              "stopped before its removal, or it would join again."),
    listener: Optional[str] = typer.Option(None, "--controller-listener", help="The controller listener's name (default: "
                                                                                "the one the voters show)."),
    stop_command: Optional[str] = typer.Option(None, "--stop-command", help="Command that stops an old controller, "
                                                                             "{id} {host} {port} filled in (e.g. \"ssh "
                                                                             "{host} systemctl stop kafka\"); without "
                                                                             "it kmigrate says which to stop and waits."),
    catch_up_timeout: float = typer.Option(300.0, "--catch-up-timeout", help="Seconds a new controller may take to "
                                                                              "catch up before kmigrate gives up."),
    stop_timeout: float = typer.Option(1800.0, "--stop-timeout", help="Seconds to wait for an old controller to stop."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Read the quorum, run the checks and print every step as "
                                                          "planned now; change nothing."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Add the new controllers to the voters and remove the old ones, one change at a time."""
    if ctx.invoked_subcommand is not None:
        return
    from migrate.runner.controllers.move import ControllerMoveRequest, run_controller_move

    book, section = _playbook(playbook)
    bootstrap_given = bool(bootstrap_controller)
    add, remove, bootstrap_controller, listener = _from_playbook(section, add, remove, bootstrap_controller, listener)
    addresses = _addresses(bootstrap_controller)
    adds = parse_adds(add, listener or "CONTROLLER")
    removes = tuple(i for v in remove or [] for i in parse_id_list(v, "--remove"))
    if not adds and not removes:
        raise BadInput("nothing to do: give --add (new controllers, started as observers) and --remove (old voters), "
                       "or --playbook with a controllers: section that adds or removes one")
    for name, value in (("--catch-up-timeout", catch_up_timeout), ("--stop-timeout", stop_timeout)):
        if value <= 0:
            raise BadInput(f"{name} {value:g}: give a number of seconds above 0")
    if stop_command:
        try:
            stop_command.format(id=0, host="h", port=0)
            shlex.split(stop_command)
        except (KeyError, IndexError, ValueError) as exc:
            raise BadInput(f"--stop-command {stop_command!r}: {exc}: only {{id}}, {{host}} and {{port}} are filled "
                           "in") from None
    request = ControllerMoveRequest(
        controllers=addresses, adds=adds, removes=removes,
        settings=_settings(addresses, command_config, controller_command_config, book),
        broker_settings=_broker_settings(book, bootstrap_server, command_config),
        release=_release(kafka_version),
        auto_join_ids=frozenset(removes) if auto_join else frozenset(),
        listener=listener, stop_command=stop_command, dry_run=dry_run,
        catch_up_timeout_s=catch_up_timeout, stop_timeout_s=stop_timeout,
        named_by=f"--playbook {shlex.quote(str(playbook))}" if playbook and not bootstrap_given else "")
    if output == OutputFormat.json:  # JSON lines, as kmigrate partitions writes them: each event, then "done"
        result = run_controller_move(request, emit_json_line)
        emit_json_line({"event": "done", **result.to_dict()})
        return
    with err_console.status("kmigrate controllers: reading the quorum") as status:
        def show(event: dict) -> None:
            if event["event"] == "waiting":
                status.update(f"waiting: {event['message']}")
            elif event["event"] == "quorum":
                console.print(f"quorum: leader {event['leader']}, voters {event['voters']}, observers "
                              f"{event['observers']}, kraft.version {event['kraft_version']}", markup=False)
                console.print(f"order: {event['stop_order']}", markup=False)
            else:
                console.print(f"{event['event']}: {event['message']}", markup=False, soft_wrap=True)
                status.update(event["message"])
        result = run_controller_move(request, show)
    _render(result)


def _broker_settings(book, bootstrap_server: Optional[str], command_config: Optional[Path]):
    """The brokers' client settings (``--bootstrap-server`` > the playbook's kafka: section; None: no broker asked)."""
    from migrate.commands.settings import Inputs

    if not bootstrap_server and book is None:
        return None
    return Inputs(playbook=book).client(bootstrap_server, command_config)


def _render(result) -> None:
    if result.dry_run:
        console.print(f"[bold]dry run[/bold]: voters {list(result.voters_before)}; nothing changed. Steps as planned now:")
        for i, step in enumerate(result.planned, 1):
            console.print(f"  {i}. {step}", markup=False, soft_wrap=True)
        return
    if result.already_done:
        console.print(f"[green]already done[/green]: voters {list(result.voters_after)}, leader {result.leader_after}; "
                      "nothing changed")
    else:
        console.print(f"[green]moved[/green]: voters {list(result.voters_before)} -> {list(result.voters_after)}, "
                      f"leader {result.leader_after} ({result.seconds:.1f} s)")
        for s in result.steps:
            console.print(f"  {s['step']} {s['controller']}: {s['seconds']} s", markup=False)
    console.print("next:")
    for i, step in enumerate(result.next_steps, 1):
        console.print(f"  {i}. {step}", markup=False, soft_wrap=True)


@app.command("controller-config")
def controller_config(
    node_id: int = typer.Argument(..., help="The new controller's node.id."),
    host: Optional[str] = typer.Option(None, "--host", help="The host the new controller's controller listener is "
                                                             "reached at (default: the playbook's controllers.add)."),
    port: Optional[int] = typer.Option(None, "--port", help="Its controller listener port (default: the playbook's, "
                                                            "else 9093)."),
    playbook: Optional[Path] = typer.Option(None, "--playbook", "-p",
                                            help="Playbook YAML with a controllers: section: the new controller's host "
                                                 "and port, the current controllers; flags given win over it."),
    bootstrap_controller: Optional[str] = BOOTSTRAP_CONTROLLER,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    controller_command_config: Optional[Path] = CONTROLLER_COMMAND_CONFIG_OPTION,
    listener: Optional[str] = typer.Option(None, "--controller-listener", help="The controller listener's name "
                                                                                "(default: the one the voters show)."),
    protocol: str = typer.Option("PLAINTEXT", "--security-protocol", help="The controller listener's security protocol."),
    metadata_log_dir: Optional[str] = typer.Option(None, "--metadata-log-dir", help="The new controller's log.dirs."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Print a new controller's server.properties and its kafka-storage format command (it starts as an observer)."""
    from migrate.runner.controllers.config import render_new_controller

    book, section = _playbook(playbook)
    planned = next((c for c in section.add if c.id == node_id), None) if section is not None else None
    if section is not None:
        bootstrap_controller = bootstrap_controller or section.bootstrap_now
        listener = listener or section.listener_name
    host = host or (planned.host if planned is not None else None)
    port = port if port is not None else (planned.port if planned is not None else 9093)
    if not host:
        raise BadInput(f"no host for controller {node_id}: give --host (where its controller listener is reached)"
                       + (", or list it under the playbook's controllers.add" if section is not None else ""))
    if not 0 < port < 65536:
        raise BadInput(f"--port {port}: give a TCP port (1-65535)")
    addresses = _addresses(bootstrap_controller)
    doc = render_new_controller(addresses, _settings(addresses, command_config, controller_command_config, book),
                                node_id, host, port, listener, protocol, metadata_log_dir)
    if output == OutputFormat.json:
        emit_json(doc)
        return
    from migrate.core.kraft.config import lines

    console.print(f"# server.properties of controller {node_id} (cluster {doc['cluster_id']}, voters {doc['voters']})",
                  markup=False)
    for line in lines(doc["properties"]):
        console.print(line, markup=False, soft_wrap=True)
    console.print(f"# then: {' '.join(shlex.quote(c) for c in doc['format_command'])}", markup=False, soft_wrap=True)
    for note in doc["notes"]:
        console.print(f"# {note}", markup=False, soft_wrap=True)


@app.command("upgrade-kraft-version")
def upgrade_kraft_version(
    bootstrap_controller: Optional[str] = BOOTSTRAP_CONTROLLER,
    bootstrap_server: Optional[str] = typer.Option(
        None, "--bootstrap-server", envvar="KAFKA_BOOTSTRAP_SERVERS",
        help="Kafka brokers: kraft.version 1 is read back there too, and the brokers that still run with "
             "controller.quorum.voters are named."),
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    controller_command_config: Optional[Path] = CONTROLLER_COMMAND_CONFIG_OPTION,
    kafka_version: Optional[str] = typer.Option(
        None, "--kafka-version", help="The controllers' Kafka release, used only where they do not show it "
                                      "(ApiVersions); 4.1 or later converts a static quorum."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds to wait for kraft.version 1 to be read back."),
    playbook: Optional[Path] = typer.Option(None, "--playbook", "-p",
                                            help="Playbook YAML with a controllers: section (its voters are asked) and "
                                                 "kafka: settings; flags given win over it."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Read and check, say what would be sent; change nothing."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Make a static quorum dynamic (Kafka 4.1+): UpdateFeatures kraft.version=1, read back, then what is left to roll."""
    from migrate.runner.controllers.upgrade import KraftUpgradeRequest, run_kraft_upgrade

    book, section = _playbook(playbook)
    addresses = _addresses(bootstrap_controller or (section.bootstrap_now if section is not None else None))
    if timeout <= 0:
        raise BadInput(f"--timeout {timeout:g}: give a number of seconds above 0")
    request = KraftUpgradeRequest(
        controllers=addresses, settings=_settings(addresses, command_config, controller_command_config, book),
        broker_settings=_broker_settings(book, bootstrap_server, command_config),
        release=_release(kafka_version), dry_run=dry_run, timeout_s=timeout)
    if output == OutputFormat.json:
        emit_json(run_kraft_upgrade(request).to_dict())
        return
    with err_console.status("kmigrate controllers upgrade-kraft-version: reading the quorum") as status:
        def show(event: dict) -> None:
            if event["event"] == "features":
                console.print(f"active controller {event['leader']}: kraft.version {event['kraft_version']}, "
                              f"metadata.version {event['metadata_version']}, Kafka {event['release']}", markup=False)
            else:
                console.print(f"{event['event']}: {event['message']}", markup=False, soft_wrap=True)
                status.update(event["message"])
        result = run_kraft_upgrade(request, show)
    _render_upgrade(result)


def _render_upgrade(result) -> None:
    if result.action == "dry-run":
        console.print(f"[bold]dry run[/bold]: would send {result.request}; nothing changed", soft_wrap=True,
                      highlight=False)
    elif result.action == "already-dynamic":
        console.print(f"[green]already dynamic[/green]: kraft.version {result.kraft_version_after}; nothing changed",
                      highlight=False)
    else:
        console.print(f"[green]upgraded[/green]: kraft.version {result.kraft_version_before} -> "
                      f"{result.kraft_version_after}, read back ({result.seconds:.1f} s)", highlight=False)
    voters = ", ".join(f"{v['id']} ({v['directory_id'] or 'no directory id'})" for v in result.voters)
    console.print(f"voters: {voters}", markup=False, soft_wrap=True)
    if not result.next_steps:
        console.print("nothing left: every node runs with controller.quorum.bootstrap.servers", markup=False)
        return
    console.print("next:")
    for i, step in enumerate(result.next_steps, 1):
        console.print(f"  {i}. {step}", markup=False, soft_wrap=True)
