"""The runbook names the playbook's --command-config on the commands that take no playbook (a secured cluster)."""

from migrate.core.plan.planner import build_runbook


def _commands(**kwargs) -> list[str]:
    return [step.command for step in build_runbook(None, {1: 4}, (4,), {4: None}, has_moves=True, **kwargs)]


def test_verify_and_health_get_the_client_file_when_the_playbook_has_one():
    with_file = _commands(bootstrap="a:9092", command_config="/etc/kmigrate/client.properties")
    snapshot = next(c for c in with_file if c.startswith("kmigrate verify snapshot"))
    compare = next(c for c in with_file if c.startswith("kmigrate verify compare"))
    assert snapshot.endswith("--bootstrap-server a:9092 --command-config /etc/kmigrate/client.properties")
    assert compare == "kmigrate verify compare before.json --command-config /etc/kmigrate/client.properties"
    assert not any("--command-config" in c for c in _commands(bootstrap="a:9092"))
