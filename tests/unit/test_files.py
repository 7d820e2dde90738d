"""migrate/files.py: the playbook and --command-config files an operator names, read into core values."""

import pytest

from migrate.errors import BadInput
from migrate.files import client_settings, load_command_config, load_playbook


def test_command_config_is_read_relative_to_the_playbook(tmp_path):
    (tmp_path / "client.properties").write_text("security.protocol=SASL_SSL\nsasl.mechanism = PLAIN\nclient.id=x\n")
    (tmp_path / "p.yaml").write_text(
        "kafka: {bootstrap_servers: 'h:9092', command_config: client.properties, client: {client.id: y}}\n"
        "zookeeper: {connect: z}\n"
    )
    pb = load_playbook(tmp_path / "p.yaml")
    assert pb.kafka.command_config == str(tmp_path / "client.properties")
    assert pb.kafka.command_config_properties == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "client.id": "x"}
    assert pb.kafka.client_settings() == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "client.id": "y", "bootstrap.servers": "h:9092",
    }


def test_missing_files_are_one_line(tmp_path):
    with pytest.raises(BadInput, match="not found") as exc:
        load_playbook(tmp_path / "nope.yaml")
    assert "\n" not in exc.value.message
    (tmp_path / "p.yaml").write_text("kafka: {bootstrap_servers: 'h:9092', command_config: missing.properties}\nzookeeper: {connect: z}\n")
    with pytest.raises(BadInput, match=r"^playbook \S*/p.yaml: kafka.command_config: file .*missing.properties not found"):
        load_playbook(tmp_path / "p.yaml")


def test_command_config_is_translated_for_the_clients(tmp_path):
    props = tmp_path / "client.properties"
    props.write_text('security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n'
                     'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
                     'username="admin" password="s3cret";\n')
    assert load_command_config(props)["security.protocol"] == "SASL_SSL"
    settings = client_settings("b1:9092,b2:9092", props)
    assert settings.bootstrap_servers == "b1:9092,b2:9092"
    assert settings.settings == {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
                                 "sasl.username": "admin", "sasl.password": "s3cret"}


@pytest.mark.parametrize("bootstrap, config, message", [
    ("", None, "no Kafka bootstrap servers"),
    ("b1", None, "expected host:port"),
    ("b1:9092", "missing.properties", "no such file"),
])
def test_bad_client_settings_are_one_line(tmp_path, bootstrap, config, message):
    with pytest.raises(BadInput, match=message) as exc:
        client_settings(bootstrap, tmp_path / config if config else None)
    assert "\n" not in exc.value.message
