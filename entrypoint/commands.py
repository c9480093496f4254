"""GitHub Actions workflow commands and files: annotations, masks, step outputs, the job summary."""

from __future__ import annotations

import re
import secrets as _secrets
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator, Optional

from evalgate.errors import Problem

_LINE = re.compile(r"\bline (\d+)\b")  # "(line 5)" after a JSON path; "line 10, column 30" for a syntax error


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


class Workflow:
    """Writes workflow commands to the log and appends to GITHUB_OUTPUT / GITHUB_STEP_SUMMARY."""

    def __init__(self, output_file: Optional[str], summary_file: Optional[str], stream: Optional[IO[str]] = None):
        self.output_file = Path(output_file) if output_file else None
        self.summary_file = Path(summary_file) if summary_file else None
        self.stream = stream or sys.stdout

    def command(self, name: str, message: str, **props: Optional[str]) -> None:
        shown = ",".join(f"{k}={_property(str(v))}" for k, v in props.items() if v not in (None, ""))
        self.stream.write(f"::{name}{' ' + shown if shown else ''}::{_data(message)}\n")
        self.stream.flush()

    def mask(self, value: str) -> None:
        for line in value.splitlines():  # the runner masks line by line
            if line.strip():
                self.command("add-mask", line)

    def warning(self, message: str) -> None:
        self.command("warning", message, title="evalgate")

    def error(self, message: str, *, file: Optional[str] = None, line: Optional[int] = None, title: str = "evalgate") -> None:
        self.command("error", message, file=file, line=None if line is None else str(line), title=title)

    def problem(self, problem: Problem, file: Optional[str]) -> None:
        """An annotation for one input problem, on the file and line when they are known."""
        match = _LINE.search(problem.where or "")
        self.error(str(problem), file=file, line=int(match.group(1)) if match else None, title="evalgate: bad input")

    def log(self, text: str) -> None:
        self.stream.write(text if text.endswith("\n") else text + "\n")
        self.stream.flush()

    @contextmanager
    def verbatim(self) -> Iterator[None]:
        """Log text that may hold agent output without the runner acting on `::` lines inside it."""
        token = _secrets.token_hex(16)
        self.command("stop-commands", token)
        try:
            yield
        finally:
            self.stream.write(f"::{token}::\n")
            self.stream.flush()

    def outputs(self, values: dict[str, str]) -> None:
        """Step outputs, each in heredoc form with a delimiter that cannot occur in the value."""
        if self.output_file is None:
            return
        lines = []
        for name, value in values.items():
            delimiter = f"ghadelimiter_{_secrets.token_hex(16)}"
            while delimiter in value:
                delimiter = f"ghadelimiter_{_secrets.token_hex(16)}"
            lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
        with self.output_file.open("a", encoding="utf-8", errors="backslashreplace") as f:
            f.write("".join(lines))

    def summary(self, markdown: str) -> None:
        if self.summary_file is None:
            return
        with self.summary_file.open("a", encoding="utf-8", errors="backslashreplace") as f:
            f.write(markdown if markdown.endswith("\n") else markdown + "\n")
