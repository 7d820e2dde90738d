"""``kmigrate brokers unregister``: its refusals before any connection (one line, exit 2), and the text it prints
from the runner's result."""

from __future__ import annotations

import pytest

import migrate.runner.brokers.unregister as runner
from migrate.cli import main


def _run(*args: str) -> int:
    with pytest.raises(SystemExit) as exit_:
        main(["brokers", "unregister", *args])
    return exit_.value.code


@pytest.mark.parametrize("args, words", [
    ((), "no broker given: --broker-list"),
    (("--broker-list", "1,x"), "--broker-list"),
    (("--broker-list", "1"), "no broker to ask: give --bootstrap-server"),
    (("--broker-list", "1", "--bootstrap-server", "k:9092"), "no controller to ask: give --bootstrap-controller"),
    (("--broker-list", "1", "--bootstrap-server", "k:9092", "--bootstrap-controller", "c1:notaport"),
     "--bootstrap-controller"),
])
def test_refused_before_any_connection(args, words, capsys, monkeypatch):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("KAFKA_BOOTSTRAP_CONTROLLERS", raising=False)
    monkeypatch.setattr(runner, "run_unregister", lambda *a, **k: pytest.fail("no run after a refusal"))
    assert _run(*args) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1, err


def test_the_playbook_gives_the_brokers_and_the_new_controllers(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("KAFKA_BOOTSTRAP_CONTROLLERS", raising=False)
    book = tmp_path / "p.yaml"
    book.write_text('kafka: {bootstrap_servers: "k4:9092"}\ncontrollers:\n  voters: [{id: 1, host: c1}]\n'
                    '  add: [{id: 7, host: c7}]\n  remove: [1]\n')
    seen = {}

    def fake(ids, *, broker_settings, controllers, controller_settings, report):
        seen.update(ids=ids, bootstrap=broker_settings.bootstrap_servers, controllers=controllers)
        return runner.UnregisterResult(unregistered=(3,), already_gone=(4,), ghost_controllers=(1,),
                                       notes=["controller(s) 1 are registered but not voters"])

    monkeypatch.setattr(runner, "run_unregister", fake)
    assert _run("--broker-list", "3,4", "--playbook", str(book)) == 0
    assert seen == {"ids": (3, 4), "bootstrap": "k4:9092", "controllers": ("c7:9093",)}
    out = capsys.readouterr().out
    assert out.startswith("unregistered: 3; already gone: 4") and "note: controller(s) 1 are registered" in out
