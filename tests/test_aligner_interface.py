"""One interface for both span-aligner kinds: the protocol, and AutoAligner's dispatch on the saved kind."""

import inspect
import json

import pytest
import torch
from conftest import copy_task

from spanaug.cli.main import main
from spanaug.core import files, modeldir
from spanaug.core.aligner_settings import AlignerConfig, CrossAlignerConfig
from spanaug.core.errors import ConfigError
from spanaug.pipeline.aligner.cross_model import CrossAligner
from spanaug.pipeline.aligner.interface import SpanAlignerModel
from spanaug.pipeline.aligner.loading import AutoAligner
from spanaug.pipeline.aligner.model import SpanAligner

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _make(kind: str, tiny_encoder: str) -> SpanAlignerModel:
    """An untrained aligner of ``kind`` with seeded random weights (loading must keep them exactly),
    its threshold set so that some answers are null."""
    torch.manual_seed(0)
    if kind == "paper":
        return SpanAligner(AlignerConfig(encoder=tiny_encoder, k=2, hidden=16, threshold=0.495), device="cpu")
    return CrossAligner(CrossAlignerConfig(encoder=tiny_encoder, k=2, head_dim=16, threshold=0.05), device="cpu")


@pytest.mark.parametrize("kind", ["paper", "cross"])
def test_both_kinds_satisfy_the_protocol(tiny_encoder, kind):
    aligner = _make(kind, tiny_encoder)
    assert isinstance(aligner, SpanAlignerModel)
    assert aligner.kind == aligner.config.kind == kind
    assert isinstance(aligner.config.encoder, str) and isinstance(aligner.config.threshold, float)


def test_predict_has_one_signature_for_both_kinds():
    paper, cross = inspect.signature(SpanAligner.predict), inspect.signature(CrossAligner.predict)
    assert paper == cross
    assert list(paper.parameters) == ["self", "instances", "batch_size", "progress", "threshold"]


def test_something_else_is_not_an_aligner():
    assert not isinstance(AlignerConfig(), SpanAlignerModel)


@pytest.mark.parametrize("kind", ["paper", "cross"])
def test_round_trip_through_auto_aligner_keeps_predictions(tiny_encoder, tmp_path, kind):
    aligner = _make(kind, tiny_encoder)
    test = copy_task(30, 3)
    preds = aligner.predict(test)
    assert {p is None for p, _ in preds} == {True, False}  # the saved threshold matters
    assert aligner.save_pretrained(tmp_path / "m") == tmp_path / "m"
    assert json.loads((tmp_path / "m" / "config.json").read_text())["kind"] == kind
    again = AutoAligner.from_pretrained(tmp_path / "m", device="cpu")
    assert type(again) is type(aligner) and again.config == aligner.config
    reloaded = again.predict(test, batch_size=7)  # batching does not change an answer
    assert [p for p, _ in reloaded] == [p for p, _ in preds]
    assert [s for _, s in reloaded] == pytest.approx([s for _, s in preds], abs=1e-5)


def test_a_directory_saved_without_kind_loads_as_the_paper_aligner(tiny_encoder, tmp_path):
    aligner = _make("paper", tiny_encoder)
    aligner.save_pretrained(tmp_path / "old")
    config = tmp_path / "old" / "config.json"
    saved = json.loads(config.read_text())
    del saved["kind"]  # as the previous version wrote it, without a manifest
    config.write_text(json.dumps(saved))
    (tmp_path / "old" / modeldir.MANIFEST_FILE).unlink()
    test = copy_task(20, 4)
    again = AutoAligner.from_pretrained(tmp_path / "old", device="cpu")
    assert isinstance(again, SpanAligner) and again.config.kind == "paper"
    before, after = aligner.predict(test), again.predict(test)
    assert [p for p, _ in after] == [p for p, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before], abs=1e-6)


def _predict_cli(model, tmp_path, capsys) -> tuple[int, str]:
    instance = {"id": "a", "source_tokens": ["x", "y"], "target_tokens": ["x", "y"], "source_span": [0, 0]}
    files.write_jsonl([instance], tmp_path / "in.jsonl")
    code = main(
        [
            "align",
            "predict",
            "--model",
            str(model),
            "--instances",
            str(tmp_path / "in.jsonl"),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    return code, capsys.readouterr().err


def test_an_unknown_kind_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({"kind": "wordpiece-magic", "encoder": "x"}))
    code, err = _predict_cli(tmp_path / "m", tmp_path, capsys)
    assert code == 2
    unknown = "unknown aligner kind 'wordpiece-magic' in config.json (known: paper, cross)"
    assert err == f"spanaug: error: {tmp_path / 'm'}: {unknown}\n"
    assert not (tmp_path / "o").exists()


def test_a_directory_without_config_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    code, err = _predict_cli(tmp_path / "m", tmp_path, capsys)
    assert code == 2
    assert err == f"spanaug: error: {tmp_path / 'm'}: not a trained aligner (no config.json)\n"


def test_auto_aligner_is_not_instantiated_and_a_kind_must_be_known():
    with pytest.raises(TypeError):
        AutoAligner()
    with pytest.raises(ConfigError, match="unknown aligner kind"):
        from spanaug.pipeline.aligner.loading import aligner_class

        aligner_class("wordpiece-magic")


def test_every_kind_is_registered_once_for_loading_and_training():
    """KINDS names each kind's class, which records that kind, and its trainer; the trainers share
    the registry's signature, so a caller never branches on the kind."""
    from spanaug.pipeline.aligner.kinds import KINDS, Trainer, load_attribute

    expected = list(inspect.signature(Trainer.__call__).parameters)[1:]  # without self
    for kind, entry in KINDS.items():
        assert load_attribute(entry.model).kind == kind
        assert list(inspect.signature(load_attribute(entry.trainer)).parameters) == expected, kind
    assert [kind for kind, entry in KINDS.items() if entry.pretrains] == ["cross"]


@pytest.mark.parametrize("kind", ["paper", "cross"])
def test_train_kind_trains_either_kind_from_one_recipe(tiny_encoder, kind):
    from spanaug.core.aligner_settings import CrossTrainSection
    from spanaug.pipeline.aligner.kinds import Recipe, train_kind

    torch.manual_seed(0)
    recipe = Recipe.of(tiny_encoder, 2, epochs=1, seed=0, cross=CrossTrainSection(epochs=1, head_dim=16))
    aligner, summary = train_kind(kind, recipe, copy_task(24, 0), copy_task(8, 5), device="cpu")
    assert aligner.kind == kind and aligner.config.encoder == tiny_encoder and aligner.config.k == 2
    assert summary["threshold_source"] == "dev instances"


def test_pretraining_a_kind_that_does_not_pretrain_is_refused_before_training(tiny_encoder):
    from spanaug.pipeline.aligner.kinds import Recipe, train_kind

    recipe = Recipe.of(tiny_encoder, 2, epochs=1, seed=0)
    with pytest.raises(ConfigError, match="paper aligner: only the cross aligner pre-trains"):
        train_kind("paper", recipe, copy_task(24, 0), None, device="cpu", pretrain=copy_task(4, 1))
    with pytest.raises(ConfigError, match="unknown aligner kind 'wordpiece-magic'"):
        train_kind("wordpiece-magic", recipe, copy_task(24, 0), None)


def test_the_encoder_override_reaches_the_paper_kind_only(tiny_encoder, tmp_path, caplog):
    import shutil

    other = shutil.copytree(tiny_encoder, tmp_path / "same-encoder-elsewhere")
    test = copy_task(10, 5)
    for kind in ("paper", "cross"):
        aligner = _make(kind, tiny_encoder)
        aligner.save_pretrained(tmp_path / kind)
        again = AutoAligner.from_pretrained(tmp_path / kind, device="cpu", encoder=str(other))
        assert again.config.encoder == (str(other) if kind == "paper" else tiny_encoder)
        assert [p for p, _ in again.predict(test)] == [p for p, _ in aligner.predict(test)]
    assert "a cross aligner carries its own tuned encoder; ignoring the encoder override" in caplog.text
