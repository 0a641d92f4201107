"""``spanaug iterate`` (``shard_jobs: chain``): one process runs a shard's every iteration, with the same
files, rows and records as the per-stage commands, and its models loaded once."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import fe, seed

from spanaug.cli.main import main
from spanaug.core import artifacts
from spanaug.pipeline import shard_chain
from spanaug.pipeline.aligner import stage as aligner_stage
from spanaug.pipeline.iterations import SHARD_FILES, init_shards, shard_file
from spanaug.pipeline.paraphraser import stage as paraphraser_stage

ITERATIONS = 2


def _seeds(tmp_path: Path) -> Path:
    """Iteration 0's shard 000: four seeds, each with frame elements, one of them marked null."""
    rows = []
    for n, (tokens, start, lu) in enumerate(
        [
            ("Abby bought a car from Robin last week".split(), 1, "buy.v"),
            ("The old woman sold her book to a man".split(), 3, "sell.v"),
            ("Robin quickly bought the city a car".split(), 2, "buy.v"),
            ("A man from the city sold a car".split(), 5, "sell.v"),
        ]
    ):
        row = seed(f"s{n}", tokens, start, start, "Commerce_buy", lu)
        row["frame_elements"] = [fe("Buyer", 0, 0, coreness="Core"), fe("Place", null_type="INI")]
        rows.append(row)
    sentences = tmp_path / "seeds.parquet"
    artifacts.write_table(rows, sentences, artifacts.SENTENCES)
    chain = tmp_path / "iterations" / "iter0" / "shard000.chain.parquet"
    chain.parent.mkdir(parents=True)
    init_shards(sentences, [chain])
    return chain


def _settings(tiny_paraphraser: str, tiny_aligner: Path) -> dict[str, list[str]]:
    return {
        "constraints": ["--inflections", "true"],
        "paraphrase": [
            *("--model", tiny_paraphraser, "--backend", "hf", "--beam-size", "3", "--return-top", "2"),
            *("--max-new-tokens", "10"),
        ],
        "align": ["--model", str(tiny_aligner), "--batch-size", "4"],
        "frame_elements": ["--mode", "align", "--select", "joint"],
    }


def _per_stage(work: Path, settings: dict[str, list[str]]) -> None:
    """The iterations as the per-stage rules run them: four commands per iteration."""
    it = work / "iterations"
    for i in range(1, ITERATIONS + 1):

        def f(name: str, i: int = i) -> str:
            return shard_file(it, i, "000", name)

        commands = [
            [
                "constraints",
                "--chain",
                shard_file(it, i - 1, "000", "chain"),
                "--out",
                f("requests"),
                "--iteration",
                str(i),
            ]
            + settings["constraints"],
            ["paraphrase", "--requests", f("requests"), "--out", f("paraphrases"), "--stats", f("paraphrase_stats")]
            + settings["paraphrase"],
            [
                "align",
                "paraphrases",
                "--paraphrases",
                f("paraphrases"),
                "--out",
                f("aligned"),
                "--stats",
                f("align_stats"),
            ]
            + settings["align"]
            + settings["frame_elements"],
            ["select", "--aligned", f("aligned"), "--out", f("chain"), "--stats", f("select_stats")]
            + ["--select", "joint"],
        ]
        for argv in commands:
            assert main([*argv, *(["--device", "cpu"] if argv[0] in ("paraphrase", "align") else [])]) == 0, argv


def _iterate_argv(work: Path, settings: dict[str, list[str]]) -> list[str]:
    return [
        "iterate",
        *("--chain", str(work / "iterations/iter0/shard000.chain.parquet")),
        *("--iterations-dir", str(work / "iterations"), "--shard", "000", "--iterations", str(ITERATIONS)),
        *(f"--{key.replace('_', '-')}={' '.join(value)}" for key, value in settings.items()),
        *("--device", "cpu"),
    ]


def test_iterate_writes_the_per_stage_commands_files_rows_and_records(tmp_path, tiny_paraphraser, tiny_aligner):
    settings = _settings(tiny_paraphraser, tiny_aligner)
    stages, chain = tmp_path / "stages", tmp_path / "chain"
    for work in (stages, chain):
        _seeds(work)
    _per_stage(stages, settings)
    assert main(_iterate_argv(chain, settings)) == 0

    rows_seen = 0
    for i in range(1, ITERATIONS + 1):
        for name, suffix in SHARD_FILES.items():
            a, b = (
                Path(shard_file(stages / "iterations", i, "000", name)),
                Path(shard_file(chain / "iterations", i, "000", name)),
            )
            if suffix.endswith(".json"):
                assert json.loads(a.read_text()) == json.loads(b.read_text()), (i, name)
                continue
            schema = artifacts.SCHEMAS[
                {"requests": "requests", "paraphrases": "paraphrases", "aligned": "aligned"}.get(name, "chain")
            ]
            left, right = artifacts.read_table(a, schema), artifacts.read_table(b, schema)
            assert left.equals(right), (i, name)
            rows_seen += left.num_rows
            # The same record of what the file holds and of the command that wrote it.
            meta = [pq.read_schema(p).metadata[artifacts.ARTIFACT_KEY.encode()] for p in (a, b)]
            assert meta[0] == meta[1], (i, name, meta)
    # Something went through every stage, frame elements included.
    last = artifacts.read_table(shard_file(chain / "iterations", ITERATIONS, "000", "aligned"), artifacts.ALIGNED)
    assert rows_seen > 0 and last.num_rows > 0
    assert any(row is not None for row in last.column("frame_elements").to_pylist())


def test_each_model_is_loaded_once_for_every_iteration(tmp_path, tiny_paraphraser, tiny_aligner, monkeypatch):
    """Counted wherever a stage could load one: in the chain, and in each stage's own module."""
    loads: list[str] = []
    for module, name in [(paraphraser_stage, "load_paraphraser"), (aligner_stage, "load_aligner")]:
        real = getattr(module, name)

        def counted(*args, real=real, name=name, **kwargs):
            loads.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
        monkeypatch.setattr(shard_chain, name, counted)
    settings = _settings(tiny_paraphraser, tiny_aligner)
    _seeds(tmp_path)
    argv = _iterate_argv(tmp_path, settings)
    argv[argv.index("--iterations") + 1] = "3"
    assert main(argv) == 0
    assert sorted(loads) == ["load_aligner", "load_paraphraser"]
    assert Path(shard_file(tmp_path / "iterations", 3, "000", "chain")).is_file()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--paraphrase", "--beam-size 0", "--paraphrase: --beam-size: 0 is less than the minimum of 1"),
        ("--constraints", "--inflexions false", "--constraints: unknown option(s): --inflexions false"),
        ("--frame-elements", "--mode sideways", "--frame-elements: argument --mode: invalid choice: 'sideways'"),
        ("--align", "--batch-size 4", "--align: the following arguments are required: --model"),
        ("--paraphrase", "--prefix 'unclosed", "--paraphrase: No closing quotation"),
    ],
)
def test_a_bad_stage_setting_is_one_line_naming_both_options_and_nothing_is_written(
    tmp_path, tiny_paraphraser, tiny_aligner, capsys, option, value, message
):
    settings = _settings(tiny_paraphraser, tiny_aligner)
    _seeds(tmp_path)
    argv = [a for a in _iterate_argv(tmp_path, settings) if not a.startswith(f"{option}=")]
    assert main([*argv, f"{option}={value}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"spanaug: error: {message}") and "\n" not in err, err
    assert sorted(p.name for p in (tmp_path / "iterations").iterdir()) == ["iter0"]


@pytest.mark.parametrize("shard_jobs", ["iteration", "chain"])
def test_the_rules_stage_options_read_back_as_the_configs_settings(shard_jobs):
    """What iterate_shard passes (spanaug.workflow.plan) is the production config's every decoding and
    constraint setting, and the frame-element and aligner settings the stages take."""
    import dataclasses
    import shlex

    from conftest import production_config

    from spanaug.cli.options import parse_settings
    from spanaug.core.aligner_settings import AlignStageSettings
    from spanaug.core.config import ConstraintSettings, DecodeSettings, FrameElementSettings
    from spanaug.workflow.plan import Plan

    run = dataclasses.replace(production_config(), shard_jobs=shard_jobs, iterations=3)
    plan = Plan(run, "results/x")
    given = dict(option.split("=", 1) for option in shlex.split(plan.iterate_options()))
    (constraints,) = parse_settings(given["--constraints"], [ConstraintSettings], "--constraints")
    (decode,) = parse_settings(given["--paraphrase"], [DecodeSettings], "--paraphrase")
    (aligner,) = parse_settings(given["--align"], [AlignStageSettings], "--align")
    (fes,) = parse_settings(given["--frame-elements"], [FrameElementSettings], "--frame-elements")
    assert constraints == run.constraints
    decoded = {f.name: getattr(run.paraphraser, f.name) for f in dataclasses.fields(DecodeSettings)}
    assert decode == DecodeSettings(**{**decoded, "model": plan.paraphraser_model()})
    assert (aligner.model, aligner.batch_size, aligner.dtype) == (
        plan.aligner_model(),
        run.aligner.batch_size,
        run.aligner.dtype,
    )
    for name in ("mode", "select", "require", "candidates"):
        assert getattr(fes, name) == getattr(run.frame_elements, name)
    assert plan.per_stage_jobs() == (shard_jobs == "iteration")
    outputs = plan.shard_chain_outputs()
    assert (
        len(outputs) == 3 * len(SHARD_FILES) and outputs[-1] == "results/x/iterations/iter3/shard{j}.select_stats.json"
    )


def test_a_seeds_file_that_is_not_a_chain_is_one_line_and_nothing_is_written(
    tmp_path, tiny_paraphraser, tiny_aligner, capsys
):
    settings = _settings(tiny_paraphraser, tiny_aligner)
    seeds = _seeds(tmp_path)
    seeds.write_bytes(b"PAR1 this is no Parquet file")
    assert main(_iterate_argv(tmp_path, settings)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"spanaug: error: {seeds}") and "\n" not in err, err
    assert sorted(p.name for p in (tmp_path / "iterations").iterdir()) == ["iter0"]


def test_a_shard_without_seeds_writes_every_iterations_files_empty(tmp_path, tiny_paraphraser, tiny_aligner):
    """More shards than seeds (the per-stage jobs run on empty shards too): every file, every iteration."""
    settings = _settings(tiny_paraphraser, tiny_aligner)
    sentences = tmp_path / "seeds.parquet"
    artifacts.write_table([], sentences, artifacts.SENTENCES)
    chain = tmp_path / "iterations" / "iter0" / "shard000.chain.parquet"
    chain.parent.mkdir(parents=True)
    init_shards(sentences, [chain])
    assert main(_iterate_argv(tmp_path, settings)) == 0
    for i in range(1, ITERATIONS + 1):
        chain_i = artifacts.read_table(shard_file(tmp_path / "iterations", i, "000", "chain"), artifacts.CHAIN)
        stats = json.loads(Path(shard_file(tmp_path / "iterations", i, "000", "align_stats")).read_text())
        assert chain_i.num_rows == 0 and stats["empty_shard"] is True


@pytest.mark.parametrize("option", ["--paraphrase", "--align"])
@pytest.mark.parametrize("folder", ["missing", "empty", "other-model"])
def test_a_wrong_model_folder_is_one_line_and_nothing_is_written(
    tmp_path, tiny_paraphraser, tiny_aligner, capsys, option, folder
):
    """Both models load (and the static engine checks its step) before the first stage writes: a
    wrong folder for either leaves no requests, paraphrases or statistics behind."""
    settings = _settings(tiny_paraphraser, tiny_aligner)
    _seeds(tmp_path)
    wrong = {"missing": tmp_path / "nowhere", "empty": tmp_path / "empty", "other-model": None}[folder]
    if folder == "empty":
        wrong.mkdir()
    if wrong is None:  # the other stage's model: an aligner given as the paraphraser, and back
        wrong = tiny_aligner if option == "--paraphrase" else tiny_paraphraser
    key = option.lstrip("-")
    model_at = settings[key].index("--model") + 1
    settings[key][model_at] = str(wrong)
    assert main(_iterate_argv(tmp_path, settings)) == 2
    # The last line (the paraphraser, loaded first, may draw transformers' progress bar before it).
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("spanaug: error: ") and "Traceback" not in err, err
    assert sorted(p.name for p in (tmp_path / "iterations").iterdir()) == ["iter0"]


def test_an_iterations_dir_that_is_a_file_is_one_line_and_nothing_is_written(
    tmp_path, tiny_paraphraser, tiny_aligner, capsys
):
    settings = _settings(tiny_paraphraser, tiny_aligner)
    _seeds(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    argv = _iterate_argv(tmp_path, settings)
    argv[argv.index("--iterations-dir") + 1] = str(blocker / "iterations")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"spanaug: error: --iterations-dir {blocker / 'iterations'}: {blocker} is a file, not a folder", err
    assert blocker.read_text() == "not a folder"
