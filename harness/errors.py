"""Errors the harness reports to the user as one line (exit status 2), never as a traceback."""


class HarnessError(Exception):
    """A problem with the user's input or machine: the message says what is wrong and what to do."""

    exit_status = 2
