"""The CLI's last-resort guard: an unexpected error is one ``internal error`` line naming the file when
known, exit 2, never a traceback (unless KAFKA_AUDITOR_DEBUG is set)."""

from __future__ import annotations

import pytest

from auditor import cli
from auditor.cli.messages import fail
from parsers.errors import ParseError


def _main_raising(exc: BaseException, monkeypatch, capsys) -> tuple[int, str]:
    def app(**kw):
        raise exc

    monkeypatch.setattr(cli, "app", app)
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    return stopped.value.code, capsys.readouterr().err


def test_internal_error_is_one_line_naming_the_file(monkeypatch, capsys):
    monkeypatch.delenv("KAFKA_AUDITOR_DEBUG", raising=False)
    exc = OSError(5, "Input/output error\nat line two", "/evidence/orders-0/\x1b[2J00000000000000000000.log")
    code, err = _main_raising(exc, monkeypatch, capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("kafka-auditor: internal error: ")
    assert "/evidence/orders-0/\\x1b[2J00000000000000000000.log: OSError: [Errno 5] Input/output error" in err
    assert "\x1b" not in err and "Traceback" not in err and "KAFKA_AUDITOR_DEBUG=1" in err


def test_parse_error_names_its_file_and_byte_once(monkeypatch, capsys):
    monkeypatch.delenv("KAFKA_AUDITOR_DEBUG", raising=False)
    code, err = _main_raising(ParseError("bad length", path="/e/a.log", offset=61), monkeypatch, capsys)
    assert code == 2 and err.count("/e/a.log") == 1 and "byte 61" in err and err.count("\n") == 1


def test_multi_line_java_error_is_one_line(monkeypatch, capsys):
    monkeypatch.delenv("KAFKA_AUDITOR_DEBUG", raising=False)
    stack = "\n".join(f"\tat org.apache.spark.Frame{i}(Frame.java:{i})" for i in range(54))
    exc = RuntimeError(f"An error occurred while calling o1.collect.\n: java.io.IOException: boom\n{stack}")
    code, err = _main_raising(exc, monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and "java.io.IOException: boom" in err and "Frame" not in err


def test_debug_env_lets_the_traceback_through(monkeypatch, capsys):
    monkeypatch.setenv("KAFKA_AUDITOR_DEBUG", "1")

    def app(**kw):
        raise ValueError("x")

    monkeypatch.setattr(cli, "app", app)
    with pytest.raises(ValueError):
        cli.main()


def test_error_lines_escape_file_names(capsys):
    exit_ = fail("cannot read /e/\u202eevil\nforged: line")
    assert exit_.exit_code == 2
    err = capsys.readouterr().err
    assert err == "kafka-auditor: error: cannot read /e/\\u202eevil\\nforged: line\n"
