"""``spanaug config ...``: the JSON schema of config files (generated from the settings dataclasses), the
preflight check of a run's config, and the rules' conda environments (generated from pyproject.toml)."""

from __future__ import annotations

import logging

from spanaug.cli.options import command, group
from spanaug.core.settings import setting, settings

log = logging.getLogger(__name__)

group("config", "the configuration: its schema, checks of a run's config, the rules' environments")

HEADER = """\
# The JSON schema of spanaug config files (config/config.yaml, config/demo.yaml), with every default.
# Generated from src/spanaug/core/config.py by `spanaug config schema --out THIS_FILE` (make schema):
# edit the dataclasses there, not this file.
"""


def schema_text() -> str:
    """The schema as YAML, with its header."""
    import yaml

    from spanaug.core.config import config_schema

    return HEADER + yaml.safe_dump(config_schema(), sort_keys=False, width=110, allow_unicode=True)


@settings
class SchemaOptions:
    out: str | None = setting(None, "the YAML file to write (default: standard output)")


@command("config", "schema", help="the JSON schema of config files, with every default")
def schema(options: SchemaOptions) -> None:
    if options.out is None:
        print(schema_text(), end="")
        return
    from spanaug.core.files import atomic_path

    with atomic_path(options.out, ".yaml") as tmp:
        tmp.write_text(schema_text(), encoding="utf-8")


@settings
class CheckOptions:
    configfile: list[str] = setting(
        factory=lambda: ["config/config.yaml"],
        help="config files, merged in order as Snakemake's --configfile merges them (nested keys too)",
    )


@command(
    "config",
    "check",
    help="check a run's config before running it: settings, and every file, model, "
    "tagger and optional dependency it names (what Snakemake checks first)",
)
def check(options: CheckOptions) -> None:
    from spanaug.core.overrides import read_run_config
    from spanaug.workflow.preflight import installed_torch, preflight, run_warnings

    cfg = read_run_config(*options.configfile)
    preflight(cfg)
    for warning in run_warnings(cfg, installed_torch()):
        log.warning(warning)
    print(
        f"{', '.join(options.configfile)}: every setting, file, model and dependency is in place "
        f"(results go to {cfg.results_dir}/{cfg.run_name})"
    )


@settings
class EnvOptions:
    out_dir: str = setting("envs", "where the environment files go")
    source: str = setting(".", "the checkout whose pyproject.toml lists the dependencies")


@command("config", "envs", help="write the rules' conda environment files from pyproject.toml")
def envs(options: EnvOptions) -> None:
    from pathlib import Path

    from spanaug.core.files import atomic_path
    from spanaug.workflow.envs import ENVS, render

    for name in ENVS:
        with atomic_path(Path(options.out_dir) / f"{name}.yaml", ".yaml") as tmp:
            tmp.write_text(render(name, options.source), encoding="utf-8")


@settings
class OptionsOptions:
    keys: list[str] = setting(
        help="dotted config keys: a section gives the settings it changes from their defaults, a setting itself"
    )
    configfile: list[str] = setting(
        factory=lambda: ["config/config.yaml"], help="config files, merged in order (as for config check)"
    )
    skip: list[str] = setting(factory=list, help="settings of the sections left out (by name)")
    data_dir: str | None = setting(None, "read the config's data/ paths from this folder instead")


@command(
    "config",
    "options",
    help="config settings as the options of the command that takes them, on one line (make aligner-production)",
)
def print_options(options: OptionsOptions) -> None:
    import shlex

    from spanaug.core.errors import ConfigError
    from spanaug.core.overrides import read_run_config
    from spanaug.core.section_options import section_options

    cfg = read_run_config(*options.configfile)
    try:
        words = section_options(cfg, options.keys, options.skip, options.data_dir)
    except ConfigError as exc:  # the config's key, not an option of this command
        raise ConfigError(f"{', '.join(options.configfile)}: {exc}") from exc
    print(shlex.join(words))
