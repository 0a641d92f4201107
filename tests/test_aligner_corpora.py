"""Several training corpora for the span aligner: lists of files, word-aligned corpora named directly
(their span instances and phrase pairs made in the run), and each corpus's origin in the summary."""

import json

import pytest
from conftest import REPO
from test_preflight import _demo, _keys

from spanaug.cli.main import main
from spanaug.core.aligner_settings import AlignerTrainSection
from spanaug.core.errors import ConfigError
from spanaug.pipeline.aligner.instances import read_instances
from spanaug.pipeline.aligner.word_aligned import AlignedPair, write_aligned_json
from spanaug.workflow.preflight import check_run

# Tiny models run fastest on one thread: torch's default of one per core makes parallel test workers
# wait on each other's OpenMP barriers (a tiny decode ran 40 times slower on a busy 2-core machine).
pytestmark = pytest.mark.usefixtures("one_torch_thread")

# Sentence pairs whose rewritten words (content words, linked one to one) give span instances by the
# shared data's rule; "quickly" and "yesterday" are unlinked, so they give null instances.
REWRITES = [
    ("the man bought a car yesterday", "the guy purchased a vehicle"),
    ("the woman sold her house quickly", "the lady traded her home"),
    ("a boy walked to school today", "a child went to class today"),
    ("my uncle gave up smoking", "my relative quit smoking"),
    ("the minister said taxes rise", "the official claimed taxes rise"),
    ("scientists discovered new birds", "researchers found new birds"),
]
OTHER = [
    ("the girl painted a picture", "the child drew a picture"),
    ("the dog chased the cat", "the hound pursued the cat"),
    ("they built a bridge", "they constructed a bridge"),
]
HELD_OUT = [
    ("the workers stopped the machine", "the staff halted the engine"),
    ("she handed the letter over", "she passed the note over"),
]


def _corpus(prefix: str, n: int = 6, texts: list[tuple[str, str]] = REWRITES) -> list[AlignedPair]:
    """Word-aligned pairs: shared words and same-position rewrites linked, the rest left unlinked."""
    pairs = []
    for k, (src, tgt) in enumerate(texts[:n]):
        s, t = src.split(), tgt.split()
        links = {(i, i) for i in range(min(len(s), len(t)))}
        pairs.append(AlignedPair(f"{prefix}:{k}", s, t, links, set(links)))
    return pairs


def test_file_settings_take_one_path_or_a_list():
    # a single string stays valid (older configs), a list is kept, null means none
    train = AlignerTrainSection(instances="a.jsonl", dev=None, phrase_pairs=["p.json", "q.json"])
    assert train.instances == ["a.jsonl"] and train.dev == [] and train.phrase_pairs == ["p.json", "q.json"]
    assert AlignerTrainSection(word_aligned="w.json").phrase_sources() == ["w.json"]
    assert AlignerTrainSection(word_aligned="w.json", word_aligned_phrases=False).phrase_sources() == []
    with pytest.raises(ConfigError, match="instances"):
        AlignerTrainSection(instances=[3])


def test_run_config_reads_a_string_or_a_list():
    cfg = _demo(
        aligner={"train": {"bitext": None, "bitext_phrases": False, "instances": "x.jsonl", "dev": ["d.jsonl"]}}
    )
    assert cfg.aligner.train.instances == ["x.jsonl"] and cfg.aligner.train.dev == ["d.jsonl"]


def test_preflight_refuses_missing_word_aligned_corpora_and_names_twice(tmp_path):
    there = tmp_path / "corpus.train.json"
    write_aligned_json(_corpus("c"), there)
    other = tmp_path / "other"
    other.mkdir()
    write_aligned_json(_corpus("d"), other / "corpus.dev.json")
    cfg = _demo(
        aligner={
            "train": {
                "bitext": None,
                "bitext_phrases": False,
                "word_aligned": [str(there), str(tmp_path / "missing.json")],
                "word_aligned_dev": [str(other / "corpus.dev.json")],
                "phrase_pairs": [str(tmp_path / "no-pairs.json")],
            }
        }
    )
    # (the demo's evaluation and baselines use the bitext's instances: their problems are not ours here)
    problems = [p for p in check_run(cfg) if p.key.startswith("aligner.train")]
    assert _keys(problems) == [
        "aligner.train.phrase_pairs",
        "aligner.train.word_aligned",
        "aligner.train.word_aligned_dev",
    ]
    text = "\n".join(p.message for p in problems)
    assert "missing.json: no such file" in text and "share the name 'corpus'" in text
    # word-aligned corpora alone are training data enough
    ok = _demo(aligner={"train": {"bitext": None, "bitext_phrases": False, "word_aligned": [str(there)]}})
    assert [p for p in check_run(ok) if p.key.startswith("aligner.train")] == []


def test_train_on_several_corpora_keeps_each_origin(tiny_encoder, tmp_path):
    first, second, dev = tmp_path / "first.json", tmp_path / "second.json", tmp_path / "dev.json"
    write_aligned_json(_corpus("first"), first)
    write_aligned_json(_corpus("second", texts=OTHER), second)
    write_aligned_json(_corpus("dev", texts=HELD_OUT), dev)
    # one corpus as span instances already made, one named as a word-aligned corpus
    made = tmp_path / "first.spans.jsonl"
    assert main(["align", "import-aligned", "--input", str(first), "--out", str(made)]) == 0
    n_first = len(read_instances(made))
    out = tmp_path / "aligner"
    args = ["align", "train", "--instances", str(made), "--word-aligned", str(second), "--word-aligned-dev", str(dev)]
    args += ["--phrase-pairs", str(first), "--reversed", "--encoder", tiny_encoder, "--k", "2", "--epochs", "1"]
    assert main([*args, "--out", str(out), "--device", "cpu"]) == 0
    summary = json.loads((out / "training_summary.json").read_text())
    corpora = {(c["file"], c["part"]): c for c in summary["corpora"]}
    assert set(corpora) == {(str(made), "train"), (str(second), "train"), (str(dev), "dev")}
    assert corpora[str(made), "train"]["instances"] == n_first
    assert corpora[str(second), "train"]["instances"] > 0 and corpora[str(dev), "dev"]["instances"] > 0
    assert corpora[str(made), "train"]["null_instances"] > 0  # 'yesterday', 'quickly'
    # phrase pairs come from both corpora's pairs (first: --phrase-pairs, second: word_aligned_phrases),
    # reversed instances from every training instance with a counterpart; each counted on its own corpus
    for key in (str(made), str(second)):
        corpus = corpora[key, "train"]
        assert corpus["made"]["reversed"] == corpus["instances"] - corpus["null_instances"]
        assert corpus["made"]["phrases"] > 0
    assert summary["train_instances"] == sum(c["instances"] for c in summary["corpora"] if c["part"] == "train") + sum(
        summary["extra_sources"].values()
    )
    assert summary["threshold_source"] == "dev instances" and summary["kind"] == "paper"
    assert summary["instances_per_s"] > 0


def test_train_without_any_data_says_what_it_needs(tmp_path, capsys):
    assert main(["align", "train", "--out", str(tmp_path / "a"), "--encoder", "minilm"]) == 2
    assert "--word-aligned" in capsys.readouterr().err


def _option_values(args: list[str], flag: str) -> list[str]:
    """The values after ``flag`` up to the next option."""
    if flag not in args:
        return []
    rest = args[args.index(flag) + 1 :]
    end = next((n for n, a in enumerate(rest) if a.startswith("--")), len(rest))
    return rest[:end]


def test_make_aligner_production_trains_the_recipe_config_yaml_states():
    # the one command that reproduces the production aligner reads config/config.yaml (spanaug config
    # options): what it trains is checked against the file, not against a copy of it
    import shlex
    import shutil
    import subprocess

    import yaml

    if not shutil.which("make"):
        pytest.skip("no make")
    train = yaml.safe_load((REPO / "config/config.yaml").read_text())["aligner"]["train"]
    dry = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "aligner-production", "OUT=/tmp/prod", "SHARED=/shared/x"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.replace("\\\n", " ")
    line = next(ln for ln in dry.splitlines() if "align train" in ln)
    args = shlex.split(line)
    shared = lambda paths: [p.replace("data/", "/shared/x/", 1) for p in paths]  # noqa: E731
    assert _option_values(args, "--word-aligned") == shared(train["word_aligned"])
    assert _option_values(args, "--word-aligned-dev") == shared(train["word_aligned_dev"])
    assert ("--reversed" in args) == train["reversed"]
    assert _option_values(args, "--phrase-max-per-pair") == [str(train["phrase_max_per_pair"])]
    assert _option_values(args, "--phrase-max-len") == [str(train["phrase_max_len"])]
    assert ("--phrase-keep-identical" in args) == train["phrase_keep_identical"]
    assert json.loads(_option_values(args, "--cross")[0]) == train["cross"]
    assert _option_values(args, "--kind") == ["cross"] and _option_values(args, "--encoder") == ["minilm"]
    assert "--synthetic-lexicon" not in args  # the workflow's: make pre-trains from the shared CoNLL instead
    # synthetic pre-training, as synthetic_lexicon asks of the workflow
    assert bool(_option_values(args, "--pretrain")) == bool(train["synthetic_lexicon"])


def test_config_options_give_a_sections_changed_settings_as_the_command_reads_them(tmp_path, capsys):
    import shlex

    from spanaug.cli.options import COMMANDS, build_parser

    config = tmp_path / "c.yaml"
    config.write_text(
        "data: {inputs: [x.jsonl]}\naligner:\n  kind: cross\n  train:\n    word_aligned: [data/a.json, data/b c.json]\n"
        "    word_aligned_phrases: false\n    phrase_max_per_pair: 3\n    cross: {epochs: 1}\n"
    )
    keys = ["--keys", "aligner.kind", "aligner.train", "--configfile", str(config), "--data-dir", "/d"]
    assert main(["config", "options", *keys]) == 0
    words = shlex.split(capsys.readouterr().out)
    assert words == [
        "--kind",
        "cross",
        "--word-aligned",
        "/d/a.json",
        "/d/b c.json",
        "--word-aligned-phrases",
        "false",
        "--phrase-max-per-pair",
        "3",
        "--cross",
        '{"epochs": 1}',
    ]
    # `align train` reads them back as the section's settings, every other one at its default
    parsed = build_parser(COMMANDS, "").parse_args(["align", "train", "--out", "x", *words])
    section = AlignerTrainSection(word_aligned=["/d/a.json", "/d/b c.json"], word_aligned_phrases=False)
    section.phrase_max_per_pair, section.cross.epochs = 3, 1
    train = AlignerTrainSection(**{f: getattr(parsed, f) for f in AlignerTrainSection.__dataclass_fields__})
    assert train == section
    assert main(["config", "options", "--keys", "aligner.trian", "--configfile", str(config)]) == 2
    assert "aligner.trian: aligner has no setting 'trian'" in capsys.readouterr().err


def test_cross_domain_rows_train_on_the_production_recipes_phrase_pairs():
    # the table's `all` row stands for the production aligner: the section takes aligner.train's phrase
    # settings (config.yaml states them once), and a section that sets one keeps its own
    import yaml

    from spanaug.core.config import load_run_config

    raw = yaml.safe_load((REPO / "config/config.yaml").read_text())
    assert not {"phrase_max_per_pair", "phrase_max_len", "phrase_keep_identical"} & set(raw["aligner"]["cross_domain"])
    aligner = load_run_config(raw).aligner
    for key in ("phrase_max_per_pair", "phrase_max_len", "phrase_keep_identical"):
        assert getattr(aligner.cross_domain, key) == getattr(aligner.train, key), key
    raw["aligner"]["cross_domain"]["phrase_max_len"] = 3
    own = load_run_config(raw).aligner.cross_domain
    assert (own.phrase_max_len, own.phrase_max_per_pair) == (3, aligner.train.phrase_max_per_pair)


# ---------------------------------------------------------------- the report and the card


def _saved_aligner(path, kind: str) -> None:
    path.mkdir()
    (path / "config.json").write_text(
        json.dumps({"kind": kind, "encoder": "minilm", "threshold_source": "dev instances"})
    )
    metrics = {"soft_f1": 0.702, "exact_f1": 0.544, "n": 300, "pred_null_share": 0.0933, "gold_null_share": 0.1}
    summary = {"heldout_metrics": metrics, "calibration": {"heldout_ece_after": 0.05}} if kind == "cross" else {}
    summary["dev_metrics"] = {"soft_f1": 0.49, "exact_f1": 0.3, "n": 300} if kind == "paper" else None
    summary["corpora"] = [
        {"file": "data/edinburgh-train.gold.json", "part": "train"},
        {"file": "data/multimwa-mtref-dev.gold.json", "part": "dev"},
    ]
    (path / "training_summary.json").write_text(json.dumps(summary))


@pytest.mark.parametrize("kind", ["cross", "paper"])
def test_report_shows_the_runs_aligner_of_either_kind_beside_the_baselines(tmp_path, kind):
    from spanaug.report.summary import aligner_section, trained_aligner

    _saved_aligner(tmp_path / "aligner", kind)
    trained = trained_aligner(tmp_path / "aligner")
    assert trained["kind"] == kind and trained["corpora"] == ["data/edinburgh-train.gold.json"]
    ablation = {"table": [{"system": "cosine", "soft_f1": 0.6, "exact_f1": 0.4, "n": 50}]}
    comparison = {
        "table": [
            {"system": "FastAlign", "soft_f1": 0.47, "exact_f1": 0.29, "n": 50},
            {"system": "span aligner (ours)", "soft_f1": 0.49, "exact_f1": 0.3, "n": 50},
        ]
    }
    page = aligner_section(ablation, comparison, trained)
    assert f"this run&#39;s aligner ({kind} kind)" in page  # autoescape writes ' as &#39;
    assert ("0.702" in page) == (kind == "cross") and "cosine" in page and "FastAlign" in page
    assert ("9.3%/10.0%" in page) == (kind == "cross")  # the cross kind's held-out null share, against gold
    # the comparison's own span aligner is labelled as the paper kind it is, not as the run's aligner
    assert "span aligner (paper kind)" in page
    assert f"{kind}-kind aligner on minilm, trained on data/edinburgh-train.gold.json" in page
    # no trained aligner (an old model directory without config.json): the baselines alone
    assert trained_aligner(tmp_path / "none") is None and "this run" not in aligner_section(ablation, None, None)


def test_card_gives_every_aligner_corpus_its_licence():
    from spanaug.downstream.card import licences

    corpora = [
        "data/edinburgh-train.gold.json",
        "data/multimwa-mtref-train.gold.json",
        "data/multimwa-wiki-dev.gold.json",
        "data/fndata-1.7",
        "data/my-pairs.json",
    ]
    _, lines = licences({"inputs": ["data/fndata-1.7"], "format": "framenet", "aligner_corpora": corpora})
    by_file = {c: next(line for line in lines if f"`{c}`" in line and "Aligner" in line) for c in corpora}
    assert "Apache License 2.0" in by_file[corpora[0]]
    assert "research use; cite Lan et al. (2021)" in by_file[corpora[1]] and "MultiMWA-Wiki" in by_file[corpora[2]]
    assert "Creative Commons Attribution" in by_file[corpora[3]]
    assert "not known to spanaug" in by_file[corpora[4]]


# ---------------------------------------------------------------- the cross-domain table


def _rewritten_corpus(prefix: str, n: int, seed: int) -> list[AlignedPair]:
    """Pairs of word lists in which one word is replaced (an instance) and one dropped (a null)."""
    import random

    from conftest import WORDS

    rng = random.Random(seed)
    pairs = []
    for k in range(n):
        src = rng.sample(WORDS, 7)
        r, d = rng.sample(range(7), 2)
        tgt = list(src)
        tgt[r] = rng.choice([w for w in WORDS if w not in src])
        del tgt[d]
        links = {(i, i - (i > d)) for i in range(7) if i != d}
        pairs.append(AlignedPair(f"{prefix}:{k}", src, tgt, links, set(links)))
    return pairs


def test_cross_domain_table_on_tiny_corpora(tiny_encoder, tmp_path, capsys):
    news, news_dev, wiki = tmp_path / "news.json", tmp_path / "news-dev.json", tmp_path / "wiki.json"
    write_aligned_json(_rewritten_corpus("news", 24, 0), news)
    write_aligned_json(_rewritten_corpus("news-dev", 8, 1), news_dev)
    write_aligned_json(_rewritten_corpus("wiki", 30, 2), wiki)
    out = tmp_path / "table"
    args = ["align", "cross-domain", "--corpora", json.dumps({"news": str(news), "wiki": str(wiki)})]
    args += ["--dev", json.dumps({"news": str(news_dev)}), "--train-sets", "news", "all", "--seed", "1"]
    args += ["--encoder", tiny_encoder, "--k", "2", "--cross", json.dumps({"epochs": 1}), "--device", "cpu"]
    assert main([*args, "--out-dir", str(out)]) == 0
    rows = (out / "cross_domain.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert header[:2] == ["train", "test"] and {"soft_f1", "exact_f1", "ece", "pred_null_share"} <= set(header)
    cells = [dict(zip(header, line.split(","))) for line in rows[1:]]
    assert [(c["train"], c["test"]) for c in cells] == [
        ("news", "news (dev part)"),
        ("news", "wiki (held-out pairs)"),
        ("all", "news (dev part)"),
        ("all", "wiki (held-out pairs)"),
    ]
    for cell in cells:
        assert all(0 <= float(cell[k]) <= 1 for k in ("soft_f1", "exact_f1", "ece", "pred_null_share"))
    summary = json.loads((out / "cross_domain.json").read_text())
    # news is tested on its dev part (all of it) and tuned on 10% of its training pairs; wiki holds out pairs
    dev_instances = len(read_instances_from(news_dev))
    assert summary["domains"]["news"]["test"] == dev_instances and summary["domains"]["wiki"]["test_source"] == (
        "held-out pairs"
    )
    by_train = {r["train"]: r for r in summary["rows"]}
    assert by_train["all"]["train_instances"] == sum(d["train"] for d in summary["domains"].values())
    assert by_train["news"]["train_instances"] == summary["domains"]["news"]["train"]
    assert by_train["news"]["extra"]["reversed"] > 0 and "| train on |" in capsys.readouterr().out
    # a killed run goes on: the finished rows are kept, not retrained
    before = (out / "cross_domain.jsonl").read_text()
    assert main([*args, "--out-dir", str(out), "--resume"]) == 0
    assert (out / "cross_domain.jsonl").read_text() == before
    # a train set naming no corpus is refused before any training
    assert main([*args, "--out-dir", str(tmp_path / "bad"), "--train-sets", "news+books"]) == 2


def read_instances_from(path):
    from spanaug.pipeline.aligner.word_aligned import import_instances

    return import_instances(path, "edinburgh")


def test_preflight_checks_the_cross_domain_section(tmp_path):
    there = tmp_path / "a.json"
    write_aligned_json(_corpus("a"), there)
    section = {
        "corpora": {"a": str(there), "b": str(tmp_path / "b.json")},
        "dev": {"c": str(there)},
        "train_sets": ["a", "a+d", "all"],
    }
    problems = [p for p in check_run(_demo(aligner={"cross_domain": section})) if "cross_domain" in p.key]
    assert sorted(p.message for p in problems) == [
        "'a+d': no corpus named 'd'",
        "'c' is not one of aligner.cross_domain.corpora",
        f"{tmp_path / 'b.json'}: no such file",
    ]


def test_cross_aligner_trained_on_word_aligned_corpora_predicts(tiny_encoder, tmp_path):
    # what make aligner-production does, in small: the cross kind from word-aligned corpora alone
    # (their dev parts tune it), then align predict loads the directory
    train, dev = tmp_path / "train.json", tmp_path / "dev.json"
    write_aligned_json(_rewritten_corpus("train", 16, 0), train)
    write_aligned_json(_rewritten_corpus("dev", 6, 1), dev)
    out = tmp_path / "aligner"
    args = ["align", "train", "--kind", "cross", "--word-aligned", str(train), "--word-aligned-dev", str(dev)]
    args += ["--reversed", "--encoder", tiny_encoder, "--k", "2", "--cross", json.dumps({"epochs": 1})]
    assert main([*args, "--out", str(out), "--device", "cpu"]) == 0
    summary = json.loads((out / "training_summary.json").read_text())
    assert summary["kind"] == "cross" and summary["threshold_source"] == "dev instances"
    assert [c["part"] for c in summary["corpora"]] == ["train", "dev"] and summary["instances_per_s"] > 0
    spans, pred = tmp_path / "dev.spans.jsonl", tmp_path / "pred.jsonl"
    assert main(["align", "import-aligned", "--input", str(dev), "--out", str(spans)]) == 0
    assert main(["align", "predict", "--model", str(out), "--instances", str(spans), "--out", str(pred)]) == 0
    assert len(pred.read_text().splitlines()) == len(read_instances(spans))
