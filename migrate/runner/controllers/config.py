"""A new controller's config, read from the quorum it joins (``kmigrate controllers controller-config``)."""

from __future__ import annotations

from migrate.adapters.kafka import voters as kv
from migrate.core.clientconfig import ClientSettings
from migrate.core.controllers.config import (DEFAULT_METADATA_DIR, ControllerInputs, format_command,
                                             new_controller_config, new_controller_notes, voter_endpoints)
from migrate.core.controllers.plan import NewController
from migrate.errors import BadInput


def render_new_controller(addresses: tuple[str, ...], settings: ClientSettings | None, node_id: int, host: str,
                          port: int, listener: str | None, protocol: str, metadata_log_dir: str | None) -> dict:
    """``{"node_id", "properties", "format_command", "notes", "cluster_id", "voters"}`` for new controller
    ``node_id`` at ``host:port``: the cluster id and the voters' endpoints read from the leader (BadInput when the id
    is a voter already, or the listener cannot be told)."""
    view = kv.read_controllers(addresses, settings)
    q = view.quorum
    if q.is_voter(node_id):
        raise BadInput(f"controller {node_id} is already a voter: choose a node.id no controller or broker uses")
    names = sorted({e.name for i in q.voter_ids for e in q.endpoints(i)})
    name = listener or (names[0] if len(names) == 1 else None)
    if name is None:
        raise BadInput(f"the voters show listeners {', '.join(names) or 'none'}: give --controller-listener")
    cluster = kv.describe_cluster_controllers(view.leader, settings)
    if cluster is None or not cluster.get("cluster_id"):
        raise BadInput("the leader did not give the cluster id (DescribeCluster): check --bootstrap-controller")
    inputs = ControllerInputs(cluster["cluster_id"], voter_endpoints(q, name), listener_name=name,
                              protocol=protocol.upper(), metadata_log_dir=metadata_log_dir or DEFAULT_METADATA_DIR)
    new = NewController(node_id, host, port, name)
    return {"node_id": node_id, "properties": new_controller_config(inputs, new),
            "format_command": format_command(cluster["cluster_id"]), "notes": new_controller_notes(inputs, new),
            "cluster_id": cluster["cluster_id"], "voters": list(q.voter_ids)}
