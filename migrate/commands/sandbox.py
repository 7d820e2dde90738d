"""``kmigrate sandbox``: a real local ZooKeeper ensemble and Kafka cluster, for trying kmigrate and for tests."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json, err_console, parse_id_list
from migrate.core.units import parse_duration
from migrate.core.versions import KAFKA_RANGE_TEXT, KRAFT_RANGE_TEXT, ZOOKEEPER_RANGE_TEXT, uses_log4j2
from migrate.errors import BadInput
from migrate.sandbox import Sandbox, SandboxSpec
from migrate.sandbox.cluster import KAFKA_VERSION, ZOOKEEPER_VERSION
from migrate.sandbox.layout import target_spec

app = typer.Typer(help="Run a real local Kafka + ZooKeeper cluster (one process per node, node N on 127.0.0.N).",
                  no_args_is_help=True)

DIR_OPTION = typer.Option(None, "--dir", help="Sandbox directory (default: $KMIGRATE_SANDBOX_DIR or ~/.cache/kmigrate/sandbox).")


KAFKA_VERSION_OPTION = typer.Option(
    KAFKA_VERSION, "--kafka-version",
    help=f"Kafka release of the brokers, {KAFKA_RANGE_TEXT} (--kraft: {KRAFT_RANGE_TEXT}), jars from Maven Central "
         "(2.4.1, 2.8.2, 3.9.2 and 4.4.0 are tested on JDK 17; java is $JAVA_HOME/bin/java, else the PATH: point "
         "JAVA_HOME at another JDK for a release that does not start on yours).")
ZOOKEEPER_VERSION_OPTION = typer.Option(
    ZOOKEEPER_VERSION, "--zookeeper-version", help=f"ZooKeeper release of the servers, {ZOOKEEPER_RANGE_TEXT}.")


def _ids(explicit: Optional[str], count: int, first: int, option: str) -> tuple[int, ...]:
    if explicit:
        return parse_id_list(explicit, option)
    if count < 0:
        raise BadInput(f"{option.replace('-ids', 's')} {count}: give a count of 0 or more")
    return tuple(range(first, first + count))


@app.command("up")
def up(
    zookeepers: Optional[int] = typer.Option(None, "--zookeepers", help="ZooKeeper voters to start (default 3; none with --kraft)."),
    brokers: int = typer.Option(3, "--brokers", help="Brokers to start (the old brokers of a migration)."),
    spare_zookeepers: int = typer.Option(0, "--spare-zookeepers", help="ZooKeeper joiners, started as observers."),
    spare_brokers: int = typer.Option(0, "--spare-brokers", help="New brokers, started empty."),
    zookeeper_ids: Optional[str] = typer.Option(None, "--zookeeper-ids", help="Voter ids instead of 1..N, e.g. 11,12,13."),
    spare_zookeeper_ids: Optional[str] = typer.Option(None, "--spare-zookeeper-ids", help="Joiner ids (greater than every voter id)."),
    broker_ids: Optional[str] = typer.Option(None, "--broker-ids", help="Broker ids instead of 1..N, e.g. 101,205,310."),
    spare_broker_ids: Optional[str] = typer.Option(None, "--spare-broker-ids", help="Spare broker ids."),
    ip_prefix: str = typer.Option("127.0.0", "--ip-prefix", help="Node i listens on <prefix>.i."),
    zookeeper_port: int = typer.Option(2181, "--zookeeper-port", help="ZooKeeper client port on every node."),
    kafka_port: int = typer.Option(9092, "--kafka-port", help="Kafka listener port on every node."),
    chroot: str = typer.Option("", "--chroot", help="ZooKeeper chroot for Kafka, e.g. /kafka."),
    security: str = typer.Option(
        "plaintext", "--security",
        help="plaintext, sasl_ssl (SCRAM-SHA-512 over TLS), mtls (client certificates) or sasl_plaintext: with "
             "ACLs (AclAuthorizer) and a ZooKeeper with authentication; kmigrate sandbox env names the client files."),
    target_cluster: bool = typer.Option(False, "--target-cluster", help="Also start a second, separate cluster (its "
                                        "own ZooKeeper and brokers, in <dir>/target) to mirror to: kmigrate sandbox "
                                        "env prints KAFKA_TARGET_BOOTSTRAP_SERVERS."),
    target_brokers: int = typer.Option(1, "--target-brokers", help="With --target-cluster: its brokers."),
    target_kraft: bool = typer.Option(False, "--target-kraft", help="With --target-cluster: the target is a KRaft "
                                      "cluster (one controller, no ZooKeeper) while the source stays in ZooKeeper "
                                      "mode, the blue/green move off ZooKeeper (--kraft would make the source KRaft)."),
    target_kafka_version: Optional[str] = typer.Option(None, "--target-kafka-version", help="With --target-kraft: the "
                                                       f"target's Kafka release, {KRAFT_RANGE_TEXT} (default "
                                                       "4.4.0); --kafka-version stays the source's."),
    target_ip_prefix: Optional[str] = typer.Option(None, "--target-ip-prefix", help="With --target-cluster: its "
                                                   "loopback prefix (default: --ip-prefix's third octet plus one)."),
    kafka_version: str = KAFKA_VERSION_OPTION,
    zookeeper_version: str = ZOOKEEPER_VERSION_OPTION,
    zookeeper_tls: bool = typer.Option(False, "--zookeeper-tls", help="With --security sasl_ssl or mtls: every "
                                       "ZooKeeper server also serves TLS on its client port + 1 (secureClientPort)."),
    kraft_controllers: int = typer.Option(0, "--kraft-controllers", help="Also start this many KRaft controllers "
                                          "(ids 3000.., each on its own address, port 9093) for a ZooKeeper-to-KRaft "
                                          "migration: formatted with the cluster id, with kmigrate kraft controller-config's config."),
    kraft: bool = typer.Option(False, "--kraft", help="A KRaft cluster without ZooKeeper (Kafka 3.9.x to 4.4.x): KRaft "
                               "controllers and brokers, a dynamic quorum (KIP-853) unless --static-quorum; writes "
                               "<dir>/playbook.yaml for it."),
    controllers: int = typer.Option(3, "--controllers", help="With --kraft: KRaft controllers, the quorum's voters (ids 3000..)."),
    spare_controllers: int = typer.Option(0, "--spare-controllers", help="With --kraft: new controllers for a migration, "
                                          "formatted with --no-initial-controllers and started as observers."),
    controller_ids: Optional[str] = typer.Option(None, "--controller-ids", help="With --kraft: controller ids instead of 3000.."),
    spare_controller_ids: Optional[str] = typer.Option(None, "--spare-controller-ids", help="With --kraft: spare controller ids."),
    static_quorum: bool = typer.Option(False, "--static-quorum", help="With --kraft: a static quorum "
                                       "(controller.quorum.voters, kraft.version 0) instead of a dynamic one."),
    directory: Optional[Path] = DIR_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Start a ZooKeeper ensemble and Kafka brokers, with spare nodes for a migration, and wait until ready (--target-cluster: and a second, separate cluster; --kraft: KRaft controllers instead of ZooKeeper)."""
    if kraft:
        _up_kraft(brokers, spare_brokers, broker_ids, spare_broker_ids, controllers, spare_controllers, controller_ids,
                  spare_controller_ids, static_quorum, ip_prefix, kafka_port, kafka_version, directory, output,
                  security.lower(), refused={"--zookeepers": zookeepers is not None, "--spare-zookeepers": bool(spare_zookeepers),
                           "--zookeeper-ids": bool(zookeeper_ids), "--spare-zookeeper-ids": bool(spare_zookeeper_ids),
                           "--chroot": bool(chroot),
                           "--target-cluster": target_cluster, "--target-kraft": target_kraft,
                           "--target-kafka-version": target_kafka_version is not None, "--zookeeper-tls": zookeeper_tls,
                           "--kraft-controllers": bool(kraft_controllers)})
        return
    for given, option in ((static_quorum, "--static-quorum"), (spare_controllers or spare_controller_ids, "--spare-controllers"),
                          (controller_ids, "--controller-ids")):
        if given:
            raise BadInput(f"{option} needs --kraft (a KRaft cluster without ZooKeeper)")
    if uses_log4j2(kafka_version):
        raise BadInput(f"--kafka-version {kafka_version}: Kafka 4 has no ZooKeeper mode: add --kraft for a KRaft sandbox")
    zookeepers = 3 if zookeepers is None else zookeepers
    zk_ids = _ids(zookeeper_ids, zookeepers, 1, "--zookeeper-ids")
    spec = SandboxSpec(
        zookeeper_ids=zk_ids,
        spare_zookeeper_ids=_ids(spare_zookeeper_ids, spare_zookeepers, max(zk_ids, default=0) + 1, "--spare-zookeeper-ids"),
        broker_ids=(b_ids := _ids(broker_ids, brokers, 1, "--broker-ids")),
        spare_broker_ids=_ids(spare_broker_ids, spare_brokers, max(b_ids, default=0) + 1, "--spare-broker-ids"),
        ip_prefix=ip_prefix,
        zookeeper_client_port=zookeeper_port,
        kafka_port=kafka_port,
        chroot=chroot,
        security=security.lower(),
        kafka_version=kafka_version,
        zookeeper_version=zookeeper_version,
        zookeeper_tls=zookeeper_tls,
    )
    target = _target(spec, target_cluster, target_brokers, target_ip_prefix, target_kraft, target_kafka_version)
    if kraft_controllers < 0 or (kraft_controllers and not spec.broker_ids):
        raise BadInput(f"--kraft-controllers {kraft_controllers}: give 1 or more, with 1 or more --brokers")
    sandbox = Sandbox(directory)
    started = time.monotonic()
    if output == OutputFormat.text:
        with console.status("starting the sandbox") as status:
            sandbox.up(spec, progress=lambda msg: status.update(msg))
            if target is not None:
                sandbox.up_target(target, progress=lambda msg: status.update(msg))
            if kraft_controllers:
                _add_controllers(sandbox, kraft_controllers, lambda msg: status.update(msg))
    else:
        sandbox.up(spec)
        if target is not None:
            sandbox.up_target(target)
        if kraft_controllers:
            _add_controllers(sandbox, kraft_controllers)
    elapsed = time.monotonic() - started
    if output == OutputFormat.json:
        emit_json({"dir": str(sandbox.dir), "started_s": round(elapsed, 1), "env": sandbox.env(), "nodes": sandbox.status()})
        return
    console.print(f"sandbox up in {elapsed:.1f} s ({sandbox.dir})")
    _print_status(sandbox)
    console.print("\n" + _env_lines(sandbox))


def _target(spec: SandboxSpec, target_cluster: bool, brokers: int, ip_prefix: Optional[str], kraft: bool,
            kafka_version: Optional[str]) -> Optional[SandboxSpec]:
    """The spec of ``--target-cluster``'s cluster: ZooKeeper mode like the source, or KRaft (``--target-kraft``)."""
    if not target_cluster:
        for given, option in ((kraft, "--target-kraft"), (kafka_version is not None, "--target-kafka-version")):
            if given:
                raise BadInput(f"{option} needs --target-cluster (a second, separate cluster)")
        return None
    if kafka_version is not None and not kraft:
        raise BadInput("--target-kafka-version needs --target-kraft: a ZooKeeper-mode target runs the source's --kafka-version")
    if not kraft:
        return target_spec(spec, brokers, ip_prefix)
    from migrate.sandbox.kraft_layout import TARGET_KRAFT_VERSION, target_kraft_spec

    return target_kraft_spec(spec, brokers, ip_prefix, kafka_version or TARGET_KRAFT_VERSION)


def _up_kraft(brokers, spare_brokers, broker_ids, spare_broker_ids, controllers, spare_controllers, controller_ids,
              spare_controller_ids, static_quorum, ip_prefix, kafka_port, kafka_version, directory, output, security,
              refused) -> None:
    """``sandbox up --kraft``: a native KRaft sandbox (``migrate.sandbox.kraft_cluster``) and its playbook."""
    from migrate.sandbox.kraft_layout import FIRST_CONTROLLER_ID, kraft_spec

    bad = [option for option, given in refused.items() if given]
    if bad:
        raise BadInput(f"{bad[0]} does not go with --kraft: a KRaft sandbox has no ZooKeeper")
    c_ids = _ids(controller_ids, controllers, FIRST_CONTROLLER_ID, "--controller-ids")
    b_ids = _ids(broker_ids, brokers, 1, "--broker-ids")
    spec = kraft_spec(
        c_ids, b_ids,
        spare_controller_ids=_ids(spare_controller_ids, spare_controllers, max(c_ids, default=FIRST_CONTROLLER_ID - 1) + 1,
                                  "--spare-controller-ids"),
        spare_broker_ids=_ids(spare_broker_ids, spare_brokers, max(b_ids, default=0) + 1, "--spare-broker-ids"),
        static_quorum=static_quorum, ip_prefix=ip_prefix, kafka_port=kafka_port, kafka_version=kafka_version,
        security=security)
    sandbox = Sandbox(directory)
    started = time.monotonic()
    if output == OutputFormat.text:
        with console.status("starting the KRaft sandbox") as status:
            sandbox.up(spec, progress=lambda msg: status.update(msg))
    else:
        sandbox.up(spec)
    from migrate.sandbox.kraft_cluster import PLAYBOOK_FILE, KraftCluster

    playbook = sandbox.dir / PLAYBOOK_FILE
    playbook.write_text(KraftCluster(sandbox).playbook())
    elapsed = time.monotonic() - started
    if output == OutputFormat.json:
        emit_json({"dir": str(sandbox.dir), "started_s": round(elapsed, 1), "playbook": str(playbook),
                   "env": sandbox.env(), "nodes": sandbox.status()})
        return
    console.print(f"KRaft sandbox up in {elapsed:.1f} s ({sandbox.dir}), Kafka {spec.kafka_version}, "
                  f"{'static' if spec.static_quorum else 'dynamic'} quorum, {spec.security}")
    _print_status(sandbox)
    console.print(f"\nplaybook: {playbook}")
    console.print("\n" + _env_lines(sandbox))


def _env_lines(sandbox: Sandbox) -> str:
    env = sandbox.env()
    lines = [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    if "KMIGRATE_COMMAND_CONFIG" in env:
        lines.append("# Kafka: --command-config $KMIGRATE_COMMAND_CONFIG (user kmigrate), $KAFKA_ADMIN_COMMAND_CONFIG "
                     "(super user admin), $KAFKA_CLIENT_COMMAND_CONFIG (user client)")
    if "KMIGRATE_CONTROLLER_COMMAND_CONFIG" in env:
        lines.append("# KRaft controllers (SASL PLAIN): --controller-command-config $KMIGRATE_CONTROLLER_COMMAND_CONFIG "
                     "(user kmigrate), $KAFKA_ADMIN_CONTROLLER_COMMAND_CONFIG (super user admin)")
    if "ZOOKEEPER_AUTH_FILE" in env:
        lines.append("# ZooKeeper: digest authentication, super user and password (user:password) in $ZOOKEEPER_AUTH_FILE;"
                     " the brokers' SASL login (--zk-jaas-file) in $ZOOKEEPER_JAAS_FILE")
    if "ZOOKEEPER_CLIENT_CONFIG" in env:
        lines.append("# ZooKeeper over TLS: --zookeeper $ZOOKEEPER_SECURE_CONNECT --zk-client-config $ZOOKEEPER_CLIENT_CONFIG")
    return "\n".join(lines)


def _print_status(sandbox: Sandbox) -> None:
    table = Table("node", "address", "pid", "role", "rack", "spare")
    for row in sandbox.status():
        table.add_row(row["name"], row["address"], str(row["pid"] or "-"), row["role"], row.get("rack", ""),
                      "yes" if row["spare"] else "")
    console.print(table)


@app.command("fetch")
def fetch(kafka_version: str = KAFKA_VERSION_OPTION, zookeeper_version: str = ZOOKEEPER_VERSION_OPTION,
          output: OutputFormat = OUTPUT_OPTION) -> None:
    """Fetch the Kafka and ZooKeeper jars and Spark's Kafka source from Maven Central into the cache (once)."""
    from migrate.sandbox.cluster import fetch_jars

    dist, spark = fetch_jars(kafka_version, zookeeper_version)
    if output == OutputFormat.json:
        emit_json({"kafka": dist.kafka_version, "zookeeper": dist.zookeeper_version, "lib": str(dist.lib_dir),
                   "zookeeper_lib": str(dist.zookeeper_lib_dir),
                   "spark_kafka_source": spark.version, "spark_jars": [str(p) for p in spark.jars]})
    else:
        console.print(f"Kafka {dist.kafka_version} jars in {dist.lib_dir}, ZooKeeper {dist.zookeeper_version} jars in "
                      f"{dist.zookeeper_lib_dir}")
        console.print(f"Spark's Kafka source {spark.version} (Scala {spark.scala_version}): {len(spark.jars)} jars")


@app.command("status")
def status(directory: Optional[Path] = DIR_OPTION, output: OutputFormat = OUTPUT_OPTION) -> None:
    """Show every node: address, pid, role (ZooKeeper leader, follower, non-voting follower (joiner) or removed; Kafka controller)."""
    sandbox = Sandbox(directory)
    if not sandbox.exists:
        raise BadInput(f"no sandbox in {sandbox.dir}: start one with kmigrate sandbox up")
    if output == OutputFormat.json:
        emit_json({"dir": str(sandbox.dir), "nodes": sandbox.status()})
    else:
        _print_status(sandbox)


@app.command("env")
def env(directory: Optional[Path] = DIR_OPTION) -> None:
    """Print the bootstrap servers and ZooKeeper connect string as shell exports."""
    sandbox = Sandbox(directory)
    if not sandbox.exists:
        raise BadInput(f"no sandbox in {sandbox.dir}: start one with kmigrate sandbox up")
    typer.echo(_env_lines(sandbox))


@app.command("down")
def down(directory: Optional[Path] = DIR_OPTION, output: OutputFormat = OUTPUT_OPTION) -> None:
    """Stop every process the sandbox started."""
    sandbox = Sandbox(directory)
    stopped = sandbox.down()
    left = sandbox.running() if sandbox.exists else []
    if output == OutputFormat.json:
        emit_json({"stopped_pids": stopped, "still_running": left})
    else:
        console.print(f"stopped {len(stopped)} process(es)" + (f"; still running: {', '.join(left)}" if left else ""))


HEALTH_TIMEOUT_OPTION = typer.Option(
    "5m", "--timeout", help="How long to wait for a healthy cluster after a broker's restart (kmigrate health --wait), e.g. 5m.")


def _node_command(verb: str, doc: str):
    def command(node: str = typer.Argument(..., help="Node name, e.g. kafka-4 or zookeeper-2."),
                directory: Optional[Path] = DIR_OPTION) -> None:
        sandbox = Sandbox(directory)
        getattr(sandbox, verb)(node)
        err_console.print(f"{node}: {verb} done")

    command.__doc__ = doc
    return command


for _verb, _doc in (
    ("stop", "Stop one node gracefully."),
    ("kill", "kill -9 one node."),
    ("pause", "SIGSTOP one node (a hung host)."),
    ("resume", "SIGCONT a paused node."),
    ("start", "Start a stopped node and wait until it is ready."),
):
    app.command(_verb)(_node_command(_verb, _doc))


def _restarted(sandbox: Sandbox, what: str, restart) -> None:
    """Run a restart with a status line of its health checks; say "restarted" only once the cluster is healthy."""
    with err_console.status(f"{what}: restarting") as status:
        restart(lambda msg: status.update(f"{what}: {msg}"))
    err_console.print(f"{what}: restarted", markup=False)


@app.command("restart")
def restart(
    node: str = typer.Argument(..., help="Node name, e.g. kafka-4 or zookeeper-2."),
    timeout: str = HEALTH_TIMEOUT_OPTION,
    directory: Optional[Path] = DIR_OPTION,
) -> None:
    """Restart one node and wait until it is ready (a broker: and until the cluster is healthy again)."""
    sandbox = Sandbox(directory)
    seconds = parse_duration(timeout, "--timeout")
    sandbox.node(node)
    _restarted(sandbox, node, lambda progress: sandbox.restart(node, health_timeout_s=seconds, progress=progress))


@app.command("restart-broker")
def restart_broker(
    broker_id: int = typer.Argument(..., help="Broker id."),
    zookeeper: Optional[str] = typer.Option(None, "--zookeeper", help="New zookeeper.connect for the broker."),
    kafka_version: Optional[str] = typer.Option(
        None, "--kafka-version", help="Restart the broker on another Kafka release (a step of a rolling upgrade), "
                                      f"{KAFKA_RANGE_TEXT}."),
    kraft_phase: Optional[str] = typer.Option(
        None, "--kraft-phase", help="ZooKeeper to KRaft: migration (roll 1: the migration lines added) or kraft "
                                    "(roll 2: a KRaft broker), with the config of kmigrate kraft broker-config; "
                                    "zookeeper (the rollback: its ZooKeeper-mode config again)."),
    quorum_bootstrap: Optional[str] = typer.Option(
        None, "--controller-quorum-bootstrap-servers", help="A KRaft broker's new controller.quorum.bootstrap.servers "
                                                            "(host:port,...: the rolls around kmigrate controllers), "
                                                            "in place of controller.quorum.voters where it has them."),
    timeout: str = HEALTH_TIMEOUT_OPTION,
    directory: Optional[Path] = DIR_OPTION,
) -> None:
    """Restart one broker, optionally with a new zookeeper.connect, and wait until the cluster is healthy (a step of a rolling restart)."""
    sandbox = Sandbox(directory)
    seconds = parse_duration(timeout, "--timeout")
    sandbox.node(f"kafka-{broker_id}")
    if quorum_bootstrap is not None:
        from migrate.core.units import split_host_port

        if zookeeper is not None or kraft_phase is not None:
            raise BadInput("--controller-quorum-bootstrap-servers is a KRaft broker's: give no --zookeeper or --kraft-phase with it")
        for address in quorum_bootstrap.split(","):
            split_host_port(address.strip(), 9093, "--controller-quorum-bootstrap-servers")
        props = sandbox.broker_properties(broker_id)
        if not any(k in props for k in ("controller.quorum.bootstrap.servers", "controller.quorum.voters")):
            raise BadInput(f"broker {broker_id} runs without controller.quorum.bootstrap.servers or "
                           "controller.quorum.voters (a ZooKeeper-mode broker): nothing to change")
        # a static quorum's broker (controller.quorum.voters) leaves it for the bootstrap list (kraft.version 1 first)
        _restarted(sandbox, f"kafka-{broker_id}", lambda progress: sandbox.restart_broker(
            broker_id, health_timeout_s=seconds, progress=progress, kafka_version=kafka_version,
            settings={"controller.quorum.bootstrap.servers": quorum_bootstrap, "controller.quorum.voters": None}))
        return
    if kraft_phase is not None:
        from migrate.sandbox.kraft import KraftSandbox

        if zookeeper is not None or kafka_version is not None:
            raise BadInput("--kraft-phase takes no --zookeeper or --kafka-version: the phase's config is rendered whole")
        _restarted(sandbox, f"kafka-{broker_id}", lambda progress: KraftSandbox(sandbox).restart_broker(
            broker_id, kraft_phase, health_timeout_s=seconds, progress=progress))
        return
    _restarted(sandbox, f"kafka-{broker_id}", lambda progress: sandbox.restart_broker(
        broker_id, zookeeper, health_timeout_s=seconds, progress=progress, kafka_version=kafka_version))


# ------------------------------------------------------------------ KRaft (ZooKeeper to KRaft, KIP-866)
def _add_controllers(sandbox: Sandbox, count: int, progress=lambda msg: None, ids: Optional[str] = None) -> None:
    from migrate.sandbox.kraft import FIRST_CONTROLLER_ID, KraftSandbox

    chosen = parse_id_list(ids, "--controller-ids") if ids else tuple(range(FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + count))
    try:
        KraftSandbox(sandbox).add_controllers(chosen, progress=progress)
    except BaseException:
        sandbox.down()
        raise


@app.command("add-controllers")
def add_controllers(
    count: int = typer.Option(1, "--count", help="KRaft controllers to add (ids 3000..)."),
    controller_ids: Optional[str] = typer.Option(None, "--controller-ids", help="Controller ids instead of 3000.., e.g. 3000,3001,3002."),
    directory: Optional[Path] = DIR_OPTION,
) -> None:
    """Prepare and start KRaft controllers for a ZooKeeper-to-KRaft migration (formatted with the cluster id read from ZooKeeper, config of kmigrate kraft controller-config). On failure the whole sandbox stops."""
    from migrate.sandbox.kraft import FIRST_CONTROLLER_ID, KraftSandbox

    sandbox = Sandbox(directory)
    ids = parse_id_list(controller_ids, "--controller-ids") if controller_ids else tuple(
        range(FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + count))
    with err_console.status("adding KRaft controllers") as status:
        KraftSandbox(sandbox).add_controllers(ids, progress=lambda msg: status.update(msg))
    err_console.print(f"KRaft controllers {', '.join(map(str, ids))} started", markup=False)


@app.command("restart-controller")
def restart_controller(
    controller_id: int = typer.Argument(..., help="Controller id."),
    finalize: bool = typer.Option(False, "--finalize", help="Restart without the migration flag and ZooKeeper: "
                                  "finalizes the migration; there is no way back to ZooKeeper after it."),
    quorum_bootstrap: Optional[str] = typer.Option(
        None, "--controller-quorum-bootstrap-servers", help="In a --kraft sandbox: the controller's new "
                                                            "controller.quorum.bootstrap.servers (host:port,...), in "
                                                            "place of controller.quorum.voters (a static quorum made "
                                                            "dynamic: kraft.version 1 first)."),
    directory: Optional[Path] = DIR_OPTION,
) -> None:
    """Restart one KRaft controller with its migration config, or its finalized one (--finalize); in a --kraft sandbox
    with its own files, waiting until the quorum's leader lists it caught up again."""
    from migrate.sandbox.kraft import KraftSandbox

    sandbox = Sandbox(directory)
    what = f"controller-{controller_id}"
    if sandbox.exists and sandbox.spec.kraft:
        from migrate.sandbox.kraft_cluster import KraftCluster

        if finalize:
            raise BadInput("--finalize is for a ZooKeeper-to-KRaft migration's controllers: this sandbox has no ZooKeeper")
        settings = None
        if quorum_bootstrap is not None:
            from migrate.core.units import split_host_port

            for address in quorum_bootstrap.split(","):
                split_host_port(address.strip(), 9093, "--controller-quorum-bootstrap-servers")
            settings = {"controller.quorum.bootstrap.servers": quorum_bootstrap, "controller.quorum.voters": None}
        with err_console.status(f"{what}: restarting"):
            view = KraftCluster(sandbox).restart_controller(controller_id, settings=settings)
        err_console.print(f"{what}: restarted ({view.role(controller_id)}; leader {view.leader_id})", markup=False)
        return
    if quorum_bootstrap is not None:
        raise BadInput("--controller-quorum-bootstrap-servers is for a --kraft sandbox's controllers")
    with err_console.status(f"{what}: restarting"):
        KraftSandbox(sandbox).restart_controller(controller_id, finalize=finalize)
    err_console.print(f"{what}: restarted" + (" (finalized)" if finalize else ""), markup=False)


@app.command("stop-controllers")
def stop_controllers(directory: Optional[Path] = DIR_OPTION) -> None:
    """Stop every KRaft controller (the rollback's deprovision step; their files stay for kmigrate sandbox reformat-controllers)."""
    from migrate.sandbox.kraft import KraftSandbox

    stopped = KraftSandbox(Sandbox(directory)).stop_controllers()
    err_console.print(f"stopped {', '.join(stopped)}" if stopped else "no KRaft controller was running", markup=False)


@app.command("reformat-controllers")
def reformat_controllers(directory: Optional[Path] = DIR_OPTION) -> None:
    """A new migration attempt after a rollback: stop the KRaft controllers, wipe their metadata dirs, format them again with the cluster id and start them."""
    from migrate.sandbox.kraft import KraftSandbox

    sandbox = Sandbox(directory)
    with err_console.status("reformatting the KRaft controllers") as status:
        KraftSandbox(sandbox).reformat_controllers(progress=lambda msg: status.update(msg))
    err_console.print("KRaft controllers formatted again and started", markup=False)
