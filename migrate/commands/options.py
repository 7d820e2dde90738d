"""Connection options shared by ``kmigrate inspect``, ``plan``, ``topics create``, ``partitions`` and
``status``: defined once, so each flag has one spelling and one help.

The ZooKeeper login files (``--zk-jaas-file``, ``--zk-client-config``) are in
:mod:`migrate.commands.common`, shared with ``kmigrate zookeeper``.
"""

from __future__ import annotations

import typer

PLAYBOOK_OPTION = typer.Option(
    None, "--playbook", "-p",
    help="Migration playbook (YAML): mapping, throttle, Kafka and ZooKeeper connection; copy one from playbooks/.")
BOOTSTRAP_OPTION = typer.Option(
    None, "--bootstrap-server", help="Kafka brokers to connect to, host:port[,host:port...] (default: the playbook's).")
COMMAND_CONFIG_OPTION = typer.Option(
    None, "--command-config", help="Kafka client properties file (SASL/SSL), as for Kafka's tools.")
ZOOKEEPER_OPTION = typer.Option(
    None, "--zookeeper",
    help="ZooKeeper connect string, chroot included (default: the playbook's; kmigrate partitions adds its joiners: "
         "brokers before Kafka 2.8 hide their throttle rates from DescribeConfigs, kmigrate reads them there).")
ZK_AUTH_OPTION = typer.Option(
    None, "--zk-auth", envvar="KMIGRATE_ZK_AUTH",
    help="ZooKeeper digest auth user:password, if the ensemble needs it ($KMIGRATE_ZK_AUTH).")
ZK_AUTH_FILE_OPTION = typer.Option(
    None, "--zk-auth-file", envvar="KMIGRATE_ZK_AUTH_FILE",
    help="File with one line user:password for ZooKeeper digest auth (the secret stays off the command line).")

__all__ = ["BOOTSTRAP_OPTION", "COMMAND_CONFIG_OPTION", "PLAYBOOK_OPTION", "ZK_AUTH_FILE_OPTION", "ZK_AUTH_OPTION",
           "ZOOKEEPER_OPTION"]
