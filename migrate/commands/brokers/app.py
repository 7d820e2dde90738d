"""``kmigrate brokers``: the brokers of a KRaft cluster.

    kmigrate brokers unregister --broker-list 1,2,3 --bootstrap-server kafka4:9092 --bootstrap-controller c1:9093

After ``kmigrate partitions`` moved every replica off the retired brokers and the operator stopped them, their
registrations go (``UnregisterBroker``, what ``kafka-cluster.sh unregister --id N`` sends): a stale registration,
fenced or not, blocks the next ``metadata.version`` upgrade. Refused (one line, exit 2, nothing changed): a broker
that still runs or still hosts a replica, a controller's id. Run again, it skips what is already unregistered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json, err_console, parse_id_list
from migrate.commands.kraft.connect import CONTROLLER_COMMAND_CONFIG_OPTION, controller_settings
from migrate.commands.options import COMMAND_CONFIG_OPTION, PLAYBOOK_OPTION
from migrate.errors import BadInput

app = typer.Typer(help="The brokers of a KRaft cluster: unregister the retired ones.", no_args_is_help=True)


@app.callback()
def _brokers() -> None:
    """The brokers of a KRaft cluster."""


@app.command("unregister")
def unregister(
    broker_list: Optional[str] = typer.Option(None, "--broker-list", help="The retired brokers' ids, e.g. 1,2,3 "
                                                                          "(stopped, hosting no replica)."),
    bootstrap_server: Optional[str] = typer.Option(None, "--bootstrap-server", envvar="KAFKA_BOOTSTRAP_SERVERS",
                                                   help="Brokers that stay, host:port[,...] (default: the playbook's)."),
    bootstrap_controller: Optional[str] = typer.Option(
        None, "--bootstrap-controller", envvar="KAFKA_BOOTSTRAP_CONTROLLERS",
        help="The controllers' controller listeners, host:port[,...] (default: the playbook's controllers: voters)."),
    playbook: Optional[Path] = PLAYBOOK_OPTION,
    command_config: Optional[Path] = COMMAND_CONFIG_OPTION,
    controller_command_config: Optional[Path] = CONTROLLER_COMMAND_CONFIG_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Unregister stopped, empty brokers from the KRaft controllers (UnregisterBroker) and confirm they are gone."""
    from migrate.core.units import split_host_port
    from migrate.files import client_settings, load_playbook
    from migrate.runner.brokers.unregister import run_unregister

    ids = parse_id_list(broker_list, "--broker-list")
    if not ids:
        raise BadInput("no broker given: --broker-list 1,2,3 (the retired brokers, stopped, hosting no replica)")
    pb = load_playbook(playbook) if playbook is not None else None
    bootstrap = bootstrap_server or (pb.kafka.bootstrap_servers if pb is not None else None)
    if not bootstrap:
        raise BadInput("no broker to ask: give --bootstrap-server host:port (brokers that stay) or --playbook")
    where = bootstrap_controller or (pb.controllers.bootstrap_after if pb is not None and pb.controllers else None)
    if not where:
        raise BadInput("no controller to ask: give --bootstrap-controller host:port[,...] (the controllers' controller "
                       "listeners) or a --playbook with a controllers: section")
    controllers = tuple(a.strip() for a in where.split(",") if a.strip())
    for a in controllers:
        split_host_port(a, 9093, "--bootstrap-controller")
    command_config = command_config or (Path(pb.kafka.command_config) if pb is not None and pb.kafka.command_config else None)
    settings = client_settings(bootstrap, command_config, dict(pb.kafka.client) if pb is not None else None)
    csettings = controller_settings(None, command_config, controller_command_config, controllers, settings)
    say = (lambda m: None) if output == OutputFormat.json else (lambda m: err_console.print(m, markup=False))
    result = run_unregister(ids, broker_settings=settings, controllers=controllers, controller_settings=csettings,
                            report=say)
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    gone = ",".join(map(str, result.unregistered)) or "none"
    console.print(f"[green]unregistered[/green]: {gone}"
                  + (f"; already gone: {','.join(map(str, result.already_gone))}" if result.already_gone else "")
                  + f" ({result.seconds:.1f} s); "
                  + ("none of them is registered any more (DescribeCluster, fenced brokers included)"
                     if result.complete else "the brokers cannot list fenced registrations (Kafka 3.9)"))
    for note in result.notes:
        console.print(f"note: {note}", markup=False, soft_wrap=True)
