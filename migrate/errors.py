"""Typed errors and the exit codes the CLI maps them to.

Code below the CLI raises these; only ``cli.py`` turns them into exit codes and messages.
Every message is one line that says what is wrong and how to fix it.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1  # the command ran and found a problem (a difference, a failed step)
EXIT_BAD_INPUT = 2  # nothing was changed: the input, the environment or a pre-check is wrong


class KmigrateError(Exception):
    """Base of every error kmigrate reports to the user."""

    exit_code = EXIT_FAILURE
    kind = "error"  # how the one line on stderr begins: "kmigrate: error: ..."

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BadInput(KmigrateError):
    """Wrong input or environment detected before any change was made (exit 2)."""

    exit_code = EXIT_BAD_INPUT


class MissingTool(BadInput):
    """A program kmigrate needs (java, mvn) is not installed."""


class StepFailed(KmigrateError):
    """A step ran and failed; the message says what state the cluster is in (exit 1)."""
