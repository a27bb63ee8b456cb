"""The data contract's checks, shared by the tests of every command's outputs: the JSON Schemas published in
the package (``auditor/schemas/*.schema.json``, read with :mod:`importlib.resources` as a user would) and the
camelCase rule for every key."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator

SCHEMAS = ("report", "finding", "lost-records")


@cache
def schema(name: str) -> dict[str, Any]:
    """The published schema ``auditor/schemas/<name>.schema.json``, loaded from the installed package."""
    return json.loads(files("auditor").joinpath("schemas", f"{name}.schema.json").read_text(encoding="utf-8"))


@cache
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name), format_checker=Draft202012Validator.FORMAT_CHECKER)


def validate(name: str, doc: Any, where: str = "") -> None:
    """Assert that ``doc`` is valid against schema ``name``, listing the first few errors with their paths."""
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    shown = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}" for e in errors[:5]]
    assert not errors, f"{where} does not match {name}.schema.json:\n" + "\n".join(shown)


def validate_lines(name: str, text: str, where: str = "") -> list[dict[str, Any]]:
    """Every line of a JSON Lines text validated against schema ``name``; the parsed lines."""
    rows = [json.loads(line) for line in text.splitlines()]
    for i, row in enumerate(rows, 1):
        validate(name, row, f"{where} line {i}")
    return rows


def snake_keys(doc: Any, path: str = "") -> list[str]:
    """The path of every object key holding an underscore, at any depth of ``doc``."""
    found: list[str] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if "_" in str(k):
                found.append(f"{path}/{k}")
            found += snake_keys(v, f"{path}/{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += snake_keys(v, f"{path}/{i}")
    return found
