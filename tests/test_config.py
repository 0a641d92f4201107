"""The configuration: one dataclass per section, the generated schema, and the config files."""

import dataclasses
import re

import pytest
import yaml
from conftest import REPO

from spanaug.cli.config import schema_text
from spanaug.core.aligner_settings import AlignerTrainSection
from spanaug.core.config import DecodeSettings, ImportSettings, Resources, RunConfig, config_schema, load_run_config
from spanaug.core.errors import ConfigError
from spanaug.core.evaluation_settings import FilteringSection


def test_the_committed_schema_is_generated_from_the_dataclasses():
    committed = (REPO / "workflow/schemas/config.schema.yaml").read_text()
    assert committed == schema_text(), "run `make schema` after changing src/spanaug/core/config.py"


def test_config_readme_describes_every_top_level_section():
    """config/README.md (what the workflow catalogue shows) has a paragraph on each section of the schema."""
    readme = (REPO / "config/README.md").read_text()
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    described = set(re.findall(r"^\*\*`(\w+)`\*\*", readme, re.M)) | set(
        re.findall(r"^\*\*`\w+`\*\* and \*\*`(\w+)`\*\*", readme, re.M)
    )
    assert sorted(set(schema["properties"]) - described) == []
    assert "spanaug config schema" in readme


def test_every_default_and_bound_comes_from_its_dataclass():
    schema = config_schema()["properties"]
    beam = schema["paraphraser"]["properties"]["beam_size"]
    assert (beam["default"], beam["minimum"]) == (DecodeSettings().beam_size, 1)
    k = schema["aligner"]["properties"]["train"]["properties"]["k"]
    assert k["default"] == AlignerTrainSection().k == 5
    # Sections documented as "null: off" default to null; the others to their filled-in defaults.
    assert schema["baselines"]["default"] is None and "null" in schema["baselines"]["type"]
    assert schema["aligner"]["default"]["train"]["epochs"] == 10


@pytest.mark.parametrize("path", ["config/config.yaml", "config/demo.yaml"])
def test_the_config_files_load_with_every_default_filled(path):
    config = load_run_config(yaml.safe_load((REPO / path).read_text()))
    assert isinstance(config, RunConfig)
    assert isinstance(config.paraphraser.beam_size, int) and isinstance(config.data, ImportSettings)
    assert config.aligner.train is not None and config.aligner.train.loss in ("soft", "hard")


def test_a_config_file_holds_no_default_twice():
    """config.yaml names only what differs from the defaults (each default is written once)."""

    def same_as_default(values, schema, path=()):
        for key, value in values.items():
            prop = schema["properties"][key]
            if isinstance(value, dict) and "properties" in prop:
                yield from same_as_default(value, prop, (*path, key))
            elif "default" in prop and value == prop["default"]:
                yield ".".join((*path, key))

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    assert list(same_as_default(config, config_schema())) == []


def test_bounds_and_cross_checks_are_errors_naming_the_setting():
    with pytest.raises(ConfigError, match="beam_size: 0 is less than the minimum of 1"):
        DecodeSettings(beam_size=0)
    with pytest.raises(ConfigError, match="return_top"):
        DecodeSettings(beam_size=2, return_top=3)
    with pytest.raises(ConfigError, match=r"filters\.lax"):
        FilteringSection(filters={"lax": {"min_aligner_score": 2}})
    with pytest.raises(ConfigError, match="Additional properties"):
        load_run_config({"data": {"inputs": ["x"]}, "paraphraser": {"beam_szie": 4}})


def test_every_setting_has_help():
    """The help becomes the schema's description and the option's --help text."""
    import inspect

    import spanaug.core.aligner_settings
    import spanaug.core.config
    import spanaug.core.evaluation_settings

    modules = [spanaug.core.config, spanaug.core.aligner_settings, spanaug.core.evaluation_settings]
    classes = [
        c
        for module in modules
        for _, c in inspect.getmembers(module, inspect.isclass)
        if dataclasses.is_dataclass(c) and c.__module__ == module.__name__
    ]
    assert len(classes) > 30
    missing = [f"{c.__name__}.{f.name}" for c in classes for f in dataclasses.fields(c) if not f.metadata.get("help")]
    assert missing == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "run_name: a\niterations: 2\nrun_name: b\n",
            r"c\.yaml, line 3: duplicate key 'run_name' \(first given on line 1\)",
        ),
        ("paraphraser:\n  beam_size: 4\n  beam_size: 6\n", r"c\.yaml, line 3: duplicate key 'beam_size'"),
        ("- a\n- b\n", r"c\.yaml: a config file is a mapping of sections, not list"),
        ("data: [\n", r"c\.yaml, line 2: malformed YAML"),
    ],
)
def test_config_check_refuses_malformed_config_files(tmp_path, capsys, text, message):
    """A config file that YAML would read with a setting silently lost, or not at all: exit 2, one line."""
    from spanaug.cli.main import main

    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["config", "check", "--configfile", str(path)]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and len(err.strip().splitlines()) == 1, err


def test_config_check_names_the_line_of_a_latin1_config(tmp_path, capsys):
    from spanaug.cli.main import main

    path = tmp_path / "latin1.yaml"
    path.write_bytes("run_name: demo\n# café\n".encode("latin-1"))
    assert main(["config", "check", "--configfile", str(path)]) == 2
    assert "latin1.yaml, line 2:" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"frameid": {"fractions": [0, 1.5]}}, "frameid.fractions.0: 0 is less than or equal to the minimum of 0"),
        ({"frameid": {"fractions": [0.5, 1.5]}}, "frameid.fractions.1: 1.5 is greater than the maximum of 1"),
        ({"device": "tpu9"}, "device: 'tpu9' does not match"),
        ({"results_dir": ""}, "results_dir: '' does not match"),
        ({"results_dir": "  "}, "results_dir: '  ' does not match"),
    ],
)
def test_schema_refuses_what_a_job_would_refuse(override, message):
    raw = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_run_config({**raw, **override})


def test_config_check_names_the_file_and_the_key_as_the_config_spells_it(tmp_path, capsys):
    """A value the schema refuses: the files and ``device``, not a command's option ``--device``."""
    from spanaug.cli.main import main

    path = tmp_path / "tpu.yaml"
    path.write_text("device: tpu9\n", encoding="utf-8")
    assert main(["config", "check", "--configfile", "config/demo.yaml", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"spanaug: error: config/demo.yaml, {path}: device: 'tpu9' does not match")
    assert "--device" not in err


@pytest.mark.parametrize("device", ["auto", "cpu", "cuda", "cuda:1", "mps"])
def test_device_names_a_job_accepts(device):
    from spanaug.core.config import Runtime

    assert Runtime(device=device).device == device


def test_device_name_is_checked_by_the_commands_too():
    """The stage's settings are checked against the same schema as the preflight's config."""
    from spanaug.core.config import Runtime

    with pytest.raises(ConfigError, match="device: 'gpu' does not match"):
        Runtime(device="gpu")


def test_nested_config_override_out_of_bounds_says_what_a_config_file_says():
    """--config paraphraser='{beam_size: 0}' arrives as strings; the message is about the bound, not the type."""
    from spanaug.core.overrides import coerce_overrides

    raw = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    from_file = {**raw, "paraphraser": {**raw["paraphraser"], "beam_size": 0}}
    from_cli = {**raw, **coerce_overrides({"paraphraser": {**raw["paraphraser"], "beam_size": "0"}})}
    messages = []
    for cfg in (from_file, from_cli):
        with pytest.raises(ConfigError) as info:
            load_run_config(cfg)
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "paraphraser.beam_size: 0 is less than the minimum of 1"


def test_the_systems_cross_rows_train_as_the_runs_cross_aligner():
    """aligner.systems.cross null: the cross rows take aligner.train.cross, in the filled config itself."""
    from spanaug.core.aligner_settings import CrossTrainSection

    def _with_aligner(section):
        return load_run_config({"data": {"inputs": ["corpus"]}, "aligner": section})

    tuned = _with_aligner({"systems": {}, "train": {"cross": {"tune_layers": 3}}})
    assert tuned.aligner.systems.cross.tune_layers == 3
    own = _with_aligner({"systems": {"cross": {"tune_layers": 1}}, "train": {"cross": {"tune_layers": 3}}})
    assert own.aligner.systems.cross.tune_layers == 1
    assert _with_aligner({"model": "m", "train": None, "systems": {}}).aligner.systems.cross is None
    # `spanaug align systems` without --cross trains as a run whose aligner.train.cross is left out.
    assert _with_aligner({"systems": {}}).aligner.systems.cross == CrossTrainSection()


def _demo_with(**sections) -> dict:
    return {**yaml.safe_load((REPO / "config" / "demo.yaml").read_text()), **sections}


def test_one_key_of_resources_gpu_keeps_the_other_gpu_defaults():
    """resources.gpu's defaults (1 GPU, 4 cores, 240 min) are its own, not the CPU rules' (issue 33)."""
    resources = load_run_config(_demo_with(resources={"gpu": {"mem_mb": 64000}})).resources
    assert (resources.gpu.gpus, resources.gpu.mem_mb, resources.gpu.runtime, resources.gpu.cpus) == (1, 64000, 240, 4)
    assert resources.cpu == Resources() and resources.cpu.gpus == 0


def test_the_committed_schema_fills_in_resources_gpu_with_the_gpu_defaults(tmp_path):
    """The schema (what the workflow catalogue and Snakemake's own validate() read): its defaults for
    resources.gpu are the GPU rules', so a filler of defaults keeps them under a one-key override."""
    snakemake_utils = pytest.importorskip("snakemake.utils")

    committed = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    section = tmp_path / "resources.schema.yaml"
    schema = {"$schema": committed["$schema"], **committed["properties"]["resources"]}
    section.write_text(yaml.safe_dump(schema), encoding="utf-8")
    resources = {"gpu": {"mem_mb": 64000}, "cpu": {"cpus": 2}}
    snakemake_utils.validate(resources, str(section), set_default=True)
    gpu, cpu = resources["gpu"], resources["cpu"]
    assert (gpu["gpus"], gpu["mem_mb"], gpu["runtime"], gpu["cpus"]) == (1, 64000, 240, 4)
    assert (cpu["gpus"], cpu["mem_mb"], cpu["runtime"], cpu["cpus"]) == (0, 8000, 120, 2)


def test_a_section_field_with_its_own_default_keeps_it_under_a_partial_value():
    """The mechanism (core.settings), for any section field whose default differs from its class's."""
    from spanaug.core.settings import Settings, build, schema_of, setting, settings

    @settings
    class Inner(Settings):
        """Inner."""

        a: int = setting(1, "a")
        b: int = setting(2, "b")

    @settings
    class Outer(Settings):
        """Outer."""

        plain: Inner = setting(factory=Inner, help="class defaults")
        own: Inner = setting(factory=lambda: Inner(a=10, b=20), help="its own defaults")

    props = schema_of(Outer)["properties"]
    assert props["own"]["properties"]["a"]["default"] == 10 and props["plain"]["properties"]["a"]["default"] == 1
    assert (props["own"]["description"], props["plain"]["description"]) == ("its own defaults", "class defaults")
    assert "description" not in schema_of(Inner) or schema_of(Inner)["description"] == "Inner."
    made = build(Outer, {"own": {"b": 3}, "plain": {"b": 3}})
    assert (made.own, made.plain) == (Inner(a=10, b=3), Inner(a=1, b=3))
    assert Outer(own={"a": 5}).own == Inner(a=5, b=20)  # a section given as a mapping (an option's JSON)


@pytest.mark.parametrize("key", ["mem_mb", "runtime", "cpus", "gpus"])
@pytest.mark.parametrize("rules", ["gpu", "cpu"])
def test_resources_beyond_any_node_are_refused_naming_the_key(rules, key):
    with pytest.raises(ConfigError, match=rf"^resources\.{rules}\.{key}: 100000000000000000000 is greater than"):
        load_run_config(_demo_with(resources={rules: {key: 10**20}}))


def test_config_check_refuses_a_runtime_of_ten_to_the_twentieth(tmp_path, capsys):
    from spanaug.cli.main import main

    path = tmp_path / "huge.yaml"
    path.write_text("resources:\n  gpu:\n    mem_mb: 100000000000000000000\n", encoding="utf-8")
    assert main(["config", "check", "--configfile", "config/demo.yaml", str(path)]) == 2
    err = capsys.readouterr().err
    assert "resources.gpu.mem_mb: 100000000000000000000 is greater than the maximum of 16777216" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("frame_elements", "message"),
    [
        ({"mode": "off", "require": "core"}, r"^frame_elements\.require: core needs frame elements carried"),
        ({"mode": "off", "require": "all"}, r"^frame_elements\.require: all needs frame elements carried"),
        ({"mode": "off", "select": "joint"}, r"^frame_elements\.select: joint needs frame elements carried"),
        ({"mode": "align", "candidates": 10**9}, r"^frame_elements\.candidates: 1000000000 is greater than the max"),
    ],
)
def test_contradictory_frame_element_settings_are_refused_naming_the_key(frame_elements, message):
    with pytest.raises(ConfigError, match=message):
        load_run_config(_demo_with(frame_elements=frame_elements))


def test_frame_element_settings_that_agree_are_taken():
    cfg = load_run_config(_demo_with(frame_elements={"mode": "keep", "require": "all", "select": "joint"}))
    assert (cfg.frame_elements.mode, cfg.frame_elements.require, cfg.frame_elements.select) == ("keep", "all", "joint")


def test_an_unquoted_off_is_explained(tmp_path, capsys):
    """YAML 1.1 reads `mode: off` as false: the error says to quote it, not only that False is no mode."""
    from spanaug.cli.main import main

    path = tmp_path / "off.yaml"
    path.write_text("frame_elements:\n  mode: off\n", encoding="utf-8")
    assert main(["config", "check", "--configfile", "config/demo.yaml", str(path)]) == 2
    err = capsys.readouterr().err
    assert "frame_elements.mode: False is not one of ['off', 'align', 'keep']" in err
    assert "write it in quotes, e.g. 'off'" in err and len(err.strip().splitlines()) == 1
