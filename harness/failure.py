"""The one line that says why a tool failed, picked from its stderr (or stdout).

A tool's last line is often not the cause: Node prints its version after a stack trace, Rust's
panic ends with a RUST_BACKTRACE hint, the JVM with "at ..." frames. The cause is the last line
that reads like an error; a Rust panic's message is the line after "panicked at <file>:".
"""
from __future__ import annotations

import re
from pathlib import Path

NOISE = re.compile(r"^(Node\.js v[\d.]+|note: run with `RUST_BACKTRACE=|at |\.\.\. \d+ more|[\^~\s{}()\[\],;]*$)")
ERROR_LIKE = re.compile(r"error|panicked|exception|cannot|can't|could not|couldn't|unable|no such file|does not exist|"
                        r"not found|failed|fatal|refused|denied|invalid|unknown|not supported", re.IGNORECASE)
MAX_CHARS = 300


def cause_line(stderr: str, stdout: str = "") -> str:
    """The most telling line of the tool's error output; 'no output' when both are empty."""
    for text in (stderr, stdout):
        lines = [line.strip() for line in text.splitlines()]
        telling = [i for i, line in enumerate(lines) if line and not NOISE.match(line)]
        if not telling:
            continue
        errors = [i for i in telling if ERROR_LIKE.search(lines[i])]
        index = errors[-1] if errors else telling[-1]
        line = lines[index]
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if line.endswith(":") and following and not NOISE.match(following):   # "panicked at src/x.rs:1:2:" + message
            line = f"{line} {following}"
        return line[:MAX_CHARS]
    return "no output"


def name_the_missing_path(error: str, command: list[str]) -> str:
    """A bare "No such file or directory" (oha's whole message) completed with the paths the command
    line names (alone or after '=') whose folder does not exist: what it was most likely about."""
    if "no such file" not in error.lower() or "/" in error:
        return error
    missing = [path for path in (arg.split("=", 1)[-1] for arg in command)
               if path.startswith("/") and not Path(path).parent.is_dir()]
    return f"{error} (its command names {', '.join(missing)}: no such folder)" if missing else error
