"""``--zk-auth-file``: ZooKeeper digest credentials read from a file (off the command line), never echoed."""

from __future__ import annotations

import pytest

from migrate.errors import BadInput
from migrate.files import zk_auth


def test_the_file_gives_user_and_password(tmp_path):
    f = tmp_path / "zk.auth"
    f.write_text("\nsuper:s3cr:et\n")
    assert zk_auth(None, f) == "super:s3cr:et"
    assert zk_auth("a:b", None) == "a:b"
    assert zk_auth(None, None) is None


@pytest.mark.parametrize("text", ["nocolon\n", ":password\n", "a:b\nc:d\n", ""])
def test_a_file_that_is_not_one_user_password_line_is_refused_without_echoing_it(tmp_path, text):
    f = tmp_path / "zk.auth"
    f.write_text(text)
    with pytest.raises(BadInput) as err:
        zk_auth(None, f)
    assert err.value.message == f"--zk-auth-file {f}: expected one line user:password (ZooKeeper digest authentication)"


def test_missing_file_and_both_options(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        zk_auth(None, tmp_path / "absent")
    with pytest.raises(BadInput, match="either --zk-auth or --zk-auth-file"):
        zk_auth("a:b", tmp_path / "absent")
