"""The connection options of ``kmigrate kraft``'s commands: ZooKeeper and the brokers (flags first, then the
playbook), and the client settings for the controllers' controller listener."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from migrate.errors import BadInput

ZOOKEEPER_OPTION = typer.Option(None, "--zookeeper", envvar="ZOOKEEPER_CONNECT",
                                help="The brokers' zookeeper.connect, chroot included (default: the playbook's).")
BOOTSTRAP_OPTION = typer.Option(None, "--bootstrap-server", envvar="KAFKA_BOOTSTRAP_SERVERS",
                                help="Kafka brokers, host:port[,host:port...] (default: the playbook's).")
VOTERS_OPTION = typer.Option(None, "--controller-quorum-voters",
                             help="The new controllers as Kafka's controller.quorum.voters: id@host:port,... "
                                  "(default: the playbook's kraft: section).")
CONTROLLER_COMMAND_CONFIG_OPTION = typer.Option(
    None, "--controller-command-config",
    help="Kafka client properties (security.protocol, SASL, TLS) for the controllers' controller listener (default: "
         "--command-config's, with the playbook's kraft.security_protocol when there is one; PLAINTEXT without either).")
BOOTSTRAP_CONTROLLER_OPTION = typer.Option(
    None, "--bootstrap-controller", help="The KRaft controllers' controller listeners, host:port[,...], asked "
                                         "DescribeQuorum, their migration flag and whether they still run (default: the "
                                         "playbook's kraft: controllers, else the controller.quorum.voters the brokers run "
                                         "with after roll 1; ZooKeeper-mode brokers do not forward DescribeQuorum).")
BROKER_LIST_OPTION = typer.Option(None, "--broker-list", help="Broker ids of the cluster (default: those in /brokers/ids "
                                                              "and in assignments); a KRaft broker leaves /brokers/ids.")
BROKER_PROPERTIES_OPTION = typer.Option(
    None, "--broker-properties", help="A broker's server.properties, read whole (secrets included) instead of "
                                      "DescribeConfigs; repeat for several brokers (its broker.id says which).")


def connection(playbook: Optional[Path], zookeeper: Optional[str], bootstrap_server: Optional[str],
                command_config: Optional[Path], zk_auth, zk_auth_file, zk_jaas_file, zk_client_config_file,
                zookeeper_optional: bool = False):
    """(playbook or None, zookeeper connect, client settings or None, ZooKeeper auth list); with
    ``zookeeper_optional`` the connect string is None when neither --zookeeper nor the playbook gives one."""
    from migrate.core.zookeeper.auth import parse_auth
    from migrate.files import client_settings, load_playbook
    from migrate.files import zk_auth as read_zk_auth, zk_client_config, zk_jaas

    pb = load_playbook(playbook) if playbook is not None else None
    connect = zookeeper or (pb.zookeeper.reading_connect if pb is not None and pb.zookeeper is not None else None)
    if not connect and not zookeeper_optional:
        raise BadInput("no ZooKeeper given: use --zookeeper host:port/chroot (the brokers' zookeeper.connect) or --playbook")
    bootstrap = bootstrap_server or (pb.kafka.bootstrap_servers if pb is not None else None)
    settings = client_settings(bootstrap, command_config) if bootstrap else None
    auth = parse_auth(read_zk_auth(zk_auth, zk_auth_file), zk_jaas(zk_jaas_file), zk_client_config(zk_client_config_file))
    return pb, connect or None, settings, auth


def controller_settings(pb, command_config: Optional[Path], controller_command_config: Optional[Path],
                         controllers: tuple[str, ...], settings):
    """The client settings kmigrate connects to the controllers' controller listener with (None: PLAINTEXT):
    ``--controller-command-config`` as it is; else ``--command-config``'s (the brokers' clients), with the protocol
    of the playbook's ``kraft.security_protocol`` when the playbook has a kraft: section (kmigrate renders the
    controller listener with that protocol, PLAINTEXT unless set)."""
    from dataclasses import replace

    from migrate.files import client_settings

    where = ",".join(controllers) or (settings.bootstrap_servers if settings is not None else "controller:9093")
    if controller_command_config is not None:
        return client_settings(where, controller_command_config)
    protocol = pb.kraft.security_protocol if pb is not None and pb.kraft is not None else None
    if command_config is None:
        if protocol not in (None, "PLAINTEXT"):
            raise BadInput(f"the playbook's kraft.security_protocol is {protocol}: give --controller-command-config FILE "
                           "(Kafka client properties for the controller listener) or --command-config")
        return None
    base = client_settings(where, command_config)
    if protocol is None:
        return base
    if protocol == "PLAINTEXT":
        return None
    keep = {k: v for k, v in base.settings.items()
            if not (k.startswith("sasl.") and "SASL" not in protocol) and not (k.startswith("ssl.") and "SSL" not in protocol)}
    return replace(base, settings={**keep, "security.protocol": protocol.lower()})


def parse_voters(text: str) -> tuple:
    """``3000@c1:9093,3001@[::1]:9093`` -> controllers; BadInput naming the bad entry."""
    from migrate.core.kraft.config import Controller
    from migrate.core.units import split_host_port

    out = []
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        ident, sep, address = entry.partition("@")
        if not sep or not ident.strip().isdigit():
            raise BadInput(f"--controller-quorum-voters entry {entry!r}: expected id@host:port, like 3000@c1:9093")
        host, port = split_host_port(address, None, "--controller-quorum-voters")
        out.append(Controller(int(ident), host.strip("[]"), port))
    if not out:
        raise BadInput("--controller-quorum-voters is empty: give id@host:port,... of the new controllers")
    return tuple(out)
