"""``kmigrate kraft``: ZooKeeper mode to KRaft (KIP-866). The typer app is in ``app``; the connection options
shared by its commands in ``connect``; phase 0 in ``precheck``; the way back in ``rollback``."""
