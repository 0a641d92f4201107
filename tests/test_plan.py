"""spanaug.workflow.plan: which results a config makes and which files its jobs read, decided once."""

import copy

import pytest
import yaml
from conftest import REPO

from spanaug.core.config import load_run_config
from spanaug.workflow import plan
from spanaug.workflow.plan import Plan

RES = "results/t"
DEMO = yaml.safe_load((REPO / "config/demo.yaml").read_text())
PRODUCTION = yaml.safe_load((REPO / "config/config.yaml").read_text())


def _plan(raw: dict, **changes) -> Plan:
    raw = copy.deepcopy(raw)
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        section = raw
        for name in parents:
            section = section.setdefault(name, {})
        section[key] = value
    return Plan(load_run_config(raw), RES)


def _everything(p: Plan) -> set[str]:
    """Every file the plan asks for: targets, report pages, the warnings' and the summary's inputs."""
    files = set(p.final_outputs())
    for inputs in (p.warning_inputs(), p.summary_inputs()):
        files.update(f for group in inputs.values() for f in group)
    return files


@pytest.mark.parametrize(
    ("changes", "prefix"),
    [
        ({"aligner__evaluation": None}, "aligner_eval/table2/"),
        ({"aligner__evaluation": None}, "aligner_eval/selftrain/"),
        ({"augmenters": None}, "augmenters/"),
        ({"augmenters": None}, "aligner_eval/selftrain/"),
        ({"baselines": None}, "aligner_eval/comparison"),
        ({"frameid": None, "argid": None}, "frameid/"),
        ({"argid": None}, "argid/"),
        ({"human_eval": None}, "human_eval/"),
        ({"human_eval__simulate": False}, "human_eval/human_eval"),
        ({"human_eval__simulate": False}, "human_eval/span_agreement"),
    ],
)
def test_an_optional_part_switched_off_makes_none_of_its_results(changes, prefix):
    on, off = _everything(_plan(DEMO)), _everything(_plan(DEMO, **changes))
    assert any(f.startswith(f"{RES}/{prefix}") for f in on)
    assert not any(f.startswith(f"{RES}/{prefix}") for f in off)
    # and nothing else is lost: the other parts' results stay
    assert {f for f in on if not f.startswith(f"{RES}/{prefix}")} >= off - {f for f in off if prefix in f}


def test_sections_not_in_the_demo_are_targets_when_on():
    p = _plan(DEMO, aligner__systems={}, aligner__cross_domain={"corpora": {"a": "a.json"}})
    assert {f"{RES}/aligner_eval/systems/systems.csv", f"{RES}/aligner_eval/cross_domain/cross_domain.csv"} <= set(
        p.final_outputs()
    )
    assert f"{RES}/aligner_eval/systems/systems.csv" not in _plan(DEMO).final_outputs()


def test_each_report_table_has_its_own_page_and_rule_name():
    tables = plan.TABLES
    assert len({t.slug for t in tables}) == len(tables) == len({t.page for t in tables})
    assert all((REPO / "workflow/report" / f"{t.caption}.rst").is_file() for t in tables)
    pages = _plan(DEMO).report_pages()
    assert f"{RES}/augmenters/geca.html" in pages and f"{RES}/report/summary.html" in pages


def test_the_augmenter_names_come_from_the_settings():
    assert plan.AUGMENTER_WILDCARD == "none|paraphrastic|lexsub|geca"
    assert set(plan.FRAMEID_AUGMENTERS) <= set(plan.AUGMENTERS)
    assert _plan(DEMO, augmenters=None).frameid_augmenters() == ["geca"]


def test_the_demo_plans_argid_points_on_frameid_s_split():
    p = _plan(DEMO)
    points = p.argid_points()
    assert len(points) == 3 * len(DEMO["argid"]["fractions"]) * len(DEMO["argid"]["seeds"])
    assert {f"{RES}/argid/points/{a}/f0.5.s0.json" for a in ("none", "paraphrastic", "lexsub")} <= set(points)
    assert f"{RES}/argid/curves.csv" in p.final_outputs() and f"{RES}/argid/curves.html" in p.report_pages()
    none, lexsub = p.argid_point_inputs("none"), p.argid_point_inputs("lexsub")
    assert none["train"] == [f"{RES}/frameid/split/train.parquet"] and "examples" not in none
    assert lexsub["examples"] == [f"{RES}/augmenters/lexsub.parquet"]
    # the augmenters' examples come from their section: without it, only none is trained
    assert {path.split("/")[-2] for path in _plan(DEMO, augmenters=None).argid_points()} == {"none"}
    assert _plan(DEMO, argid=None).argid_points() == []


def test_the_production_config_names_its_external_files_with_their_keys():
    files = _plan(PRODUCTION).external_files()
    keys = {f.key for f in files}
    assert {
        "data.inputs",
        "aligner.train.word_aligned",
        "aligner.train.word_aligned_dev",
        "aligner.train.synthetic_lexicon",
        "aligner.evaluation.data",
        "aligner.cross_domain.corpora",
        "aligner.cross_domain.dev",
        "baselines.instances",
        "baselines.gold_pairs",
        "frameid.lexicon",
    } <= keys
    directories = {f.path for f in files if f.directory}
    assert directories == {"data/fndata-1.7"}  # the release; hub models are no files
    # the aligner trains on the word-aligned corpora's instances and, as phrase pairs, on the corpora
    inputs = _plan(PRODUCTION).train_aligner_inputs()
    assert inputs["phrase_pairs"] == PRODUCTION["aligner"]["train"]["word_aligned"]
    assert inputs["dev"] == [f"{RES}/models/word_aligned/multimwa-{c}-dev.spans.jsonl" for c in ("mtref", "wiki")]


def test_a_trained_aligner_named_in_the_config_is_an_input_and_its_training_data_are_not(tmp_path):
    model = tmp_path / "aligner"
    model.mkdir()
    p = _plan(DEMO, aligner__model=str(model), aligner__train__instances=["given.jsonl"])
    assert p.aligner_model_input() == [str(model)]
    assert "aligner.train.bitext" in {f.key for f in p.external_files()}  # its instances still serve evaluations
    assert "aligner.train.instances" not in {f.key for f in p.external_files()}
    assert "aligner.train.instances" in {
        f.key for f in _plan(DEMO, aligner__train__instances=["given.jsonl"]).external_files()
    }


def test_stand_ins(tmp_path):
    made = plan.make_stand_ins(_plan(PRODUCTION).external_files(), tmp_path)
    assert (tmp_path / "data/fndata-1.7").is_dir() and (tmp_path / "data/edinburgh-train.gold.json").is_file()
    assert all(path.exists() for path in made)


def test_nice_follows_priority():
    assert plan.nice(max(plan.PRIORITIES.values())) == 0 < plan.nice(20) < plan.nice(0)
