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


# ---------------------------------------------------------------- finite numbers (issue 49)

NON_FINITE = [float("nan"), float("inf"), float("-inf")]


def _settings_classes() -> list[type]:
    """Every settings dataclass: the Settings subclasses, every command's option classes, and the
    sections nested in them (all registered once the CLI's modules are imported)."""
    import typing

    import spanaug.cli.main  # noqa: F401  (registers every command and imports every settings module)
    from spanaug.cli.options import COMMANDS
    from spanaug.core.settings import Settings

    found: list[type] = []

    def visit(cls: type) -> None:
        if cls in found or not dataclasses.is_dataclass(cls):
            return
        found.append(cls)
        for sub in cls.__subclasses__():
            visit(sub)
        for tp in typing.get_type_hints(cls).values():
            for arg in (tp, *typing.get_args(tp)):
                visit(arg)

    for cls in Settings.__subclasses__():
        visit(cls)
    for cmd in COMMANDS:
        for cls in cmd.settings.values():
            visit(cls)
    return found


def _with_number(tp, number):
    """A value of type ``tp`` holding ``number`` where its floats go (None when it holds no float)."""
    import types
    import typing

    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is float:
        return number
    if origin in (typing.Union, types.UnionType):
        return next((v for a in args if (v := _with_number(a, number)) is not None), None)
    if origin is list:
        inner = _with_number(args[0], number)
        return None if inner is None else [inner]
    if origin is dict:
        inner = _with_number(args[1], number)
        return None if inner is None else {"k": inner}
    return None


def _float_fields():
    import typing

    return [
        (cls, field.name, value)
        for cls in _settings_classes()
        for field in dataclasses.fields(cls)
        if (value := _with_number(typing.get_type_hints(cls)[field.name], 0.5)) is not None
    ]


def test_the_walk_finds_the_float_settings_of_every_kind():
    """The walk below is not vacuous: it reaches config sections, command options, lists and maps."""
    names = {f"{cls.__name__}.{name}" for cls, name, _ in _float_fields()}
    assert len(names) > 60
    for expected in (
        "ArgIdTrainSettings.learning_rate",  # spanaug argid train --learning-rate
        "ParaphraserTrainSettings.dropout",  # paraphraser.train.dropout
        "FilterBounds.min_aligner_score",  # filtering.filters.NAME.min_aligner_score (a map's values)
        "FrameIdSection.fractions",  # a list of floats
        "PointOptions.fraction",  # a command's own options
        "CrossTrainSection.max_minutes",  # a nullable float of a nested section
    ):
        assert expected in names


@pytest.mark.parametrize("number", NON_FINITE, ids=["nan", "inf", "-inf"])
def test_every_float_setting_refuses_nan_and_infinity(number):
    """NaN compares false with every bound and infinity passes a one-sided one: every float field of
    every settings dataclass (new ones included, found by the walk) refuses both, naming its key."""
    import jsonschema

    from spanaug.core.settings import schema_error_message, schema_of

    accepted = []
    for cls, name, finite in _float_fields():
        value = _with_number(_type_of(cls, name), number)
        validator = jsonschema.Draft202012Validator(schema_of(cls))
        errors = [e for e in validator.iter_errors({name: value}) if list(e.absolute_path)[:1] == [name]]
        if not errors:
            accepted.append(f"{cls.__name__}.{name}")
            continue
        message = schema_error_message(errors[0])
        assert message.startswith(name) and "is not a finite number" in message, message
        # The same field holding a finite number is not refused as one (a list may be too short).
        finite_errors = [e for e in validator.iter_errors({name: finite}) if list(e.absolute_path)[:1] == [name]]
        assert all("finite" not in schema_error_message(e) for e in finite_errors)
    assert accepted == []


def _type_of(cls, name):
    import typing

    return typing.get_type_hints(cls)[name]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "filtering:\n  filters:\n    x:\n      min_aligner_score: .nan\n",
            "filtering.filters.x.min_aligner_score: nan",
        ),
        ("paraphraser:\n  train:\n    dropout: .nan\n", "paraphraser.train.dropout: nan"),
        ("paraphraser:\n  train:\n    weight_decay: .inf\n", "paraphraser.train.weight_decay: inf"),
        ("frameid:\n  fractions: [0.5, .NaN]\n", "frameid.fractions.1: nan"),
        ("aligner:\n  train:\n    cross:\n      max_minutes: .inf\n", "aligner.train.cross.max_minutes: inf"),
    ],
)
def test_config_check_refuses_nan_and_infinity_naming_the_key(tmp_path, capsys, text, message):
    from spanaug.cli.main import main

    path = tmp_path / "nan.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["config", "check", "--configfile", "config/demo.yaml", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: " in err and f"{message} is not a finite number" in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_nested_config_override_of_nan_is_refused_like_a_config_file():
    from spanaug.core.overrides import coerce_overrides

    raw = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    train = {**raw["paraphraser"]["train"], "dropout": ".nan"}  # Snakemake passes a nested value as a string
    cli = coerce_overrides({"paraphraser": {**raw["paraphraser"], "train": train}})
    with pytest.raises(ConfigError, match=r"^paraphraser\.train\.dropout: nan is not a finite number"):
        load_run_config({**raw, **cli})


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "Infinity"])
def test_a_command_line_float_of_nan_or_infinity_exits_2_naming_the_option(tmp_path, capsys, value):
    """`spanaug argid train --learning-rate nan` once trained a model of NaN weights and exited 0."""
    from spanaug.cli.main import main

    out = tmp_path / "model"
    code = main(["argid", "train", "--train", str(tmp_path / "x.conll"), "--out", str(out), "--learning-rate", value])
    err = capsys.readouterr().err
    assert code == 2 and re.fullmatch(r"spanaug: error: --learning-rate: -?(nan|inf) is not a finite number.*\n", err)
    assert not out.exists()


def test_a_float_in_a_json_option_or_a_commands_own_options_is_finite(tmp_path, capsys):
    """JSON reads 1e999 as infinity; a command's own options (frameid point --fraction) are checked too."""
    from spanaug.cli.main import main

    args = ["align", "long-spans", "--instances", "i", "--gold-pairs", "g", "--out-dir", str(tmp_path / "o")]
    assert main([*args, "--cross", '{"warmup": 1e999}']) == 2
    err = capsys.readouterr().err
    assert "warmup: inf is not a finite number" in err, err
    point = ["frameid", "point", "--train", "t", "--test", "t", "--out", str(tmp_path / "p.json")]
    assert main([*point, "--fraction", "nan"]) == 2
    assert "--fraction: nan is not a finite number" in capsys.readouterr().err
    assert main([*point, "--fraction", "5"]) == 2  # its bounds, which nothing checked before
    assert "--fraction: 5.0 is greater than the maximum of 1" in capsys.readouterr().err


def test_the_committed_schema_refuses_nan_and_infinity_for_snakemake_too(tmp_path):
    """Snakemake's own validate() reads the committed schema: no finite keyword exists, so the schema
    says it with comparisons that NaN and infinity alone pass, for a number or a nullable one."""
    snakemake_utils = pytest.importorskip("snakemake.utils")

    committed = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    section = tmp_path / "filters.schema.yaml"
    schema = {"$schema": committed["$schema"], **committed["properties"]["paraphraser"]}
    section.write_text(yaml.safe_dump(schema), encoding="utf-8")
    snakemake_utils.validate({"train": {"bitext": "b", "dropout": 0.3, "max_minutes": None}}, str(section))
    for bad in ({"dropout": float("nan")}, {"max_minutes": float("inf")}, {"learning_rate": float("inf")}):
        with pytest.raises(Exception, match="should not be valid"):
            snakemake_utils.validate({"train": {"bitext": "b", **bad}}, str(section))


def test_every_commands_options_have_a_schema_to_be_checked_against():
    """A command's own options are checked when made (cli.options.settings_from): a type with no schema
    would turn every run of that command into a TypeError."""
    import spanaug.cli.main  # noqa: F401
    from spanaug.cli.options import COMMANDS
    from spanaug.core.settings import schema_of

    for cmd in COMMANDS:
        for cls in cmd.settings.values():
            assert schema_of(cls)["type"] == "object", cmd.path


# ---------------------------------------------------------------- settings never silently ignored (issue 49)


def test_the_shipped_configs_and_the_rehearsal_overlay_load():
    from spanaug.core.overrides import read_run_config

    for paths in (["config/config.yaml"], ["config/demo.yaml"], ["config/config.yaml", "config/rehearsal.yaml"]):
        assert read_run_config(*(REPO / p for p in paths)).paraphraser.model or paths == ["config/demo.yaml"]


def test_a_paraphraser_model_with_paraphraser_train_is_an_error_naming_both():
    """The run would train a paraphraser and ignore the model: refused, saying how to use the model."""
    with pytest.raises(ConfigError) as info:
        load_run_config(_demo_with(paraphraser={**_demo_with()["paraphraser"], "model": "t5-small"}))
    message = str(info.value)
    assert "paraphraser.model and paraphraser.train are both set" in message
    assert "paraphraser.train: null" in message
    section = {**_demo_with()["paraphraser"], "model": "t5-small", "train": None}
    assert load_run_config(_demo_with(paraphraser=section)).paraphraser.model == "t5-small"


def test_config_check_refuses_a_model_overlaid_on_a_config_that_trains_one(tmp_path, capsys):
    from spanaug.cli.main import main

    overlay = tmp_path / "mine.yaml"
    overlay.write_text("paraphraser:\n  model: t5-small\n", encoding="utf-8")
    assert main(["config", "check", "--configfile", "config/demo.yaml", str(overlay)]) == 2
    err = capsys.readouterr().err
    assert "paraphraser.model and paraphraser.train are both set" in err and len(err.strip().splitlines()) == 1


def test_the_model_settings_help_no_longer_says_it_is_ignored():
    prop = config_schema()["properties"]["paraphraser"]["properties"]["model"]
    assert "ignored" not in prop["description"] and "paraphraser.train" in prop["description"]
