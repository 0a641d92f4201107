"""``spanaug config ...``: the JSON schema of config files, generated from the settings dataclasses."""

from __future__ import annotations

from spanaug.cli.options import command, group
from spanaug.core.config import setting, settings

group("config", "the configuration's schema")

HEADER = """\
# The JSON schema of spanaug config files (config.yaml, config/demo.yaml), with every default.
# Generated from src/spanaug/core/config.py by `spanaug config schema --out THIS_FILE` (make schema):
# edit the dataclasses there, not this file.
"""


def schema_text() -> str:
    """The schema as YAML, with its header."""
    import yaml

    from spanaug.core.config import config_schema

    return HEADER + yaml.safe_dump(config_schema(), sort_keys=False, width=110, allow_unicode=True)


@settings
class SchemaFiles:
    out: str | None = setting(None, "the YAML file to write (default: standard output)")


@command("config", "schema", help="the JSON schema of config files, with every default")
def schema(files: SchemaFiles) -> None:
    if files.out is None:
        print(schema_text(), end="")
        return
    from spanaug.core.files import atomic_path

    with atomic_path(files.out, ".yaml") as tmp:
        tmp.write_text(schema_text(), encoding="utf-8")
