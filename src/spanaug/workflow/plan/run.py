"""The plan of one run: the files each rule reads and the results the run makes, from its filled config."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from spanaug.core.aligner_settings import corpus_name
from spanaug.core.config import RunConfig
from spanaug.downstream.curve_checks import BASELINE
from spanaug.pipeline.aligner.threshold_plan import describe_plan, threshold_plan
from spanaug.pipeline.iterations import SHARD_FILES, shard_file
from spanaug.workflow.plan.files import ExternalFile, lexicon_file, local_model
from spanaug.workflow.plan.options import stage_options
from spanaug.workflow.plan.results import (
    MADE_BY,
    OPTIONAL_READS,
    PAGES,
    SUMMARY_OPTIONAL,
    SUMMARY_READS,
    TABLES,
    TARGETS,
    WARNING_SUMMARIES,
    Table,
)


def reads_aligner_encoder(run: RunConfig) -> bool:
    """Whether a job loads aligner.encoder: aligner training or one of the aligner evaluations (the
    plan's inputs and the preflight's checks alike)."""
    a = run.aligner
    return bool((a.train and not a.model) or a.evaluation or a.systems or a.cross_domain or run.baselines)


class Plan:
    """The run's files: ``run`` is the filled config, ``res`` its results folder (results_dir/run_name)."""

    def __init__(self, run: RunConfig, res: str) -> None:
        self.run = run
        self.res = res

    # -- files outside the run

    def external_files(self) -> list[ExternalFile]:
        """Every file or directory outside the run that a job of this config reads, with its config key
        (a model or encoder only when it is a local directory)."""
        run, a = self.run, self.run.aligner
        framenet = run.data.format == "framenet"
        out = [ExternalFile("data.inputs", p, directory=framenet) for p in run.data.inputs]
        if run.paraphraser.train:
            out.append(ExternalFile("paraphraser.train.bitext", run.paraphraser.train.bitext))
            init = self.paraphraser_init_input()
            out += [ExternalFile("paraphraser.train.init", p, not p.lower().endswith(".gguf")) for p in init]
        out += [ExternalFile("paraphraser.model", p, True) for p in self.paraphraser_model_input()]
        if a.model:
            out.append(ExternalFile("aligner.model", a.model, directory=True))
        elif a.train:
            t = a.train
            for key in ("instances", "dev", "word_aligned", "word_aligned_dev", "phrase_pairs"):
                out += [ExternalFile(f"aligner.train.{key}", p) for p in getattr(t, key)]
            out += [ExternalFile("aligner.train.extra_instances", p) for p in t.extra_instances]
            out += [ExternalFile("aligner.train.pretrain", p) for p in t.pretrain]
            out += lexicon_file("aligner.train.synthetic_lexicon", t.synthetic_lexicon)
        if a.train and a.train.bitext:  # the instances made of it train the aligner or serve an evaluation
            out.append(ExternalFile("aligner.train.bitext", a.train.bitext))
        out += [ExternalFile("aligner.encoder", p, True) for p in local_model(a.encoder) if self.reads_encoder()]
        if a.evaluation and a.evaluation.data:
            out.append(ExternalFile("aligner.evaluation.data", a.evaluation.data))
        if a.systems:
            s = a.systems
            out += [ExternalFile("aligner.systems.data", s.data)] if s.data else []
            out += [ExternalFile("aligner.systems.gold_pairs", s.gold_pairs)] if s.gold_pairs else []
            out += [ExternalFile("aligner.systems.synthetic", s.synthetic)] if s.synthetic else []
        if a.cross_domain:
            c = a.cross_domain
            out += [ExternalFile("aligner.cross_domain.corpora", p) for p in c.corpora.values()]
            out += [ExternalFile("aligner.cross_domain.dev", p) for p in c.dev.values()]
            out += [ExternalFile("aligner.cross_domain.synthetic", c.synthetic)] if c.synthetic else []
        if run.baselines:
            b = run.baselines
            out += [ExternalFile("baselines.instances", b.instances)] if b.instances else []
            out += [ExternalFile("baselines.gold_pairs", b.gold_pairs)] if b.gold_pairs else []
            out += [ExternalFile("baselines.extra_text", p) for p in b.extra_text]
        if run.human_eval:
            h = run.human_eval
            out += [ExternalFile("human_eval.results", h.results)] if h.results else []
            out += [ExternalFile("human_eval.span_results", h.span_results)] if h.span_results else []
        if run.frameid:
            f = run.frameid
            for key in ("train", "dev", "test"):
                out += [ExternalFile(f"frameid.{key}", getattr(f, key))] if getattr(f, key) else []
            out += [ExternalFile("frameid.encoder", p, True) for p in local_model(f.encoder)]
            out += lexicon_file("frameid.lexicon", f.lexicon)
        if run.argid:
            out += [ExternalFile("argid.encoder", p, True) for p in local_model(run.argid.encoder)]
            out += [ExternalFile("argid.framenet", run.argid.framenet, True)] if run.argid.framenet else []
        out += lexicon_file("stats.lexicon", run.stats.lexicon)
        return out

    def reads_encoder(self) -> bool:
        """Whether a job loads aligner.encoder (:func:`reads_aligner_encoder`)."""
        return reads_aligner_encoder(self.run)

    def encoder_input(self) -> list[str]:
        """aligner.encoder as an input, when it is a local directory."""
        return local_model(self.run.aligner.encoder)

    # -- the corpus

    def corpus_inputs(self) -> list[str]:
        """The imported corpus: a FrameNet release directory, or CoNLL/JSONL files."""
        return list(self.run.data.inputs)

    def framenet_release(self) -> list[str]:
        """The release whose frame definitions the annotation task shows, when the corpus is one."""
        data = self.run.data
        return [data.inputs[0]] if data.format == "framenet" else []

    # -- the paraphraser

    def paraphraser_bitext(self) -> list[str]:
        train = self.run.paraphraser.train
        return [train.bitext] if train else []

    def paraphraser_init_input(self) -> list[str]:
        """The pretrained model paraphraser.train fine-tunes, as an input: a local folder or a .gguf file
        (a hub name or a gguf: alias is not a file of the run)."""
        train = self.run.paraphraser.train
        init = train.init if train else None
        if init and init.lower().endswith(".gguf"):
            return [init]
        return local_model(init)

    def paraphraser_model(self) -> str:
        """The model the paraphrase rule decodes with: trained in the run, or the config's."""
        p = self.run.paraphraser
        if p.train:
            return f"{self.res}/models/paraphraser"
        if not p.model:
            raise ValueError("config: set paraphraser.model or paraphraser.train")
        return p.model

    def paraphraser_model_input(self) -> list[str]:
        """The paraphraser as an input: trained in the run, or the config's when it is a local directory."""
        p = self.run.paraphraser
        return [f"{self.res}/models/paraphraser"] if p.train else local_model(p.model)

    # -- the aligner: trained in the run or the config's, and its training data

    def aligner_model(self) -> str:
        return self.run.aligner.model or f"{self.res}/models/aligner"

    def aligner_model_input(self) -> list[str]:
        return [self.aligner_model()]

    def made_instances(self) -> str:
        return f"{self.res}/models/aligner_instances.jsonl"

    def made_pairs(self) -> str:
        return f"{self.res}/models/aligner_pairs.json"

    def made_synthetic(self) -> str:
        return f"{self.res}/models/aligner_synthetic.jsonl"

    def made_word_aligned(self, path: str) -> str:
        """The span instances rule import_word_aligned makes from a word-aligned corpus."""
        return f"{self.res}/models/word_aligned/{corpus_name(path)}.spans.jsonl"

    def aligner_bitext(self) -> list[str]:
        """The paraphrase TSV that instances and phrase pairs are made of (make_alignment_instances)."""
        t = self.run.aligner.train
        return [t.bitext] if t and t.bitext else []

    def uses_bitext_instances(self) -> bool:
        """Whether the aligner trains on the instances made from aligner.train.bitext (no others given)."""
        t = self.run.aligner.train
        return bool(t and not (t.instances or t.word_aligned) and t.bitext)

    def word_aligned_corpora(self) -> dict[str, str]:
        """aligner.train's word-aligned corpora (training and dev) by name: the file name up to its first
        dot (preflight refuses two of one name), which names their span instances made in the run."""
        t = self.run.aligner.train
        if not t:
            return {}
        return {corpus_name(path): path for path in [*t.word_aligned, *t.word_aligned_dev]}

    def word_aligned_file(self, corpus: str) -> str:
        return self.word_aligned_corpora()[corpus]

    def aligner_training_files(self) -> list[str]:
        """--instances: the config's files and those made from its word-aligned corpora, or (neither
        given) those made from its bitext."""
        t = self.run.aligner.train
        assert t is not None
        files = [*t.instances, *map(self.made_word_aligned, t.word_aligned)]
        return files or [self.made_instances()]

    def aligner_dev_files(self) -> list[str]:
        """--dev: the config's dev files and the instances made from its word-aligned dev corpora."""
        t = self.run.aligner.train
        assert t is not None
        return [*t.dev, *map(self.made_word_aligned, t.word_aligned_dev)]

    def aligner_phrase_pair_files(self) -> list[str]:
        """--phrase-pairs: the config's word-aligned pairs (and its word-aligned corpora, with
        word_aligned_phrases), or with bitext_phrases the bitext's diff alignment."""
        t = self.run.aligner.train
        assert t is not None
        if t.bitext_phrases and self.uses_bitext_instances():
            return [self.made_pairs()]
        return [*t.phrase_pairs, *(t.word_aligned if t.word_aligned_phrases else [])]

    def aligner_pretrain_files(self) -> list[str]:
        """--pretrain: the config's files and the synthetic instances made in the run."""
        t = self.run.aligner.train
        assert t is not None
        return [*t.pretrain, *([self.made_synthetic()] if t.synthetic_lexicon else [])]

    def train_aligner_inputs(self) -> dict[str, list[str]]:
        """Every file align train reads, by its option."""
        t = self.run.aligner.train
        assert t is not None
        return {
            "instances": self.aligner_training_files(),
            "dev": self.aligner_dev_files(),
            "phrase_pairs": self.aligner_phrase_pair_files(),
            "pretrain": self.aligner_pretrain_files(),
            "extra_instances": list(t.extra_instances),
            "encoder": self.encoder_input(),
        }

    def synthetic_lexicon(self) -> list[str]:
        t = self.run.aligner.train
        return [t.synthetic_lexicon] if t and t.synthetic_lexicon else []

    # -- aligner evaluations: external data named in the config, or what the run derives

    def ablation_data(self) -> str:
        evaluation = self.run.aligner.evaluation
        assert evaluation is not None
        return evaluation.data or self.made_instances()

    def ablation_inputs(self, ablation: str) -> dict[str, list[str]]:
        inputs = {"data": [self.ablation_data()], "encoder": self.encoder_input()}
        if ablation == "selftrain":
            inputs["extra"] = [f"{self.res}/augmenters/graph.jsonl"]
        return inputs

    def systems_data(self) -> str:
        """aligner.systems' instances: its own, aligner.evaluation's, or those made from the bitext."""
        a = self.run.aligner
        assert a.systems is not None
        return a.systems.data or (a.evaluation and a.evaluation.data) or self.made_instances()

    def systems_pairs(self) -> str | None:
        """The word-aligned pairs of aligner.systems' instances: named in the config, or made with them."""
        systems = self.run.aligner.systems
        assert systems is not None
        made = self.systems_data() == self.made_instances()
        return systems.gold_pairs or (self.made_pairs() if made else None)

    def systems_inputs(self) -> dict[str, list[str]]:
        systems = self.run.aligner.systems
        assert systems is not None
        pairs = self.systems_pairs()
        return {
            "data": [self.systems_data()],
            "gold_pairs": [pairs] if pairs else [],
            "synthetic": [systems.synthetic] if systems.synthetic else [],
            "encoder": self.encoder_input(),
        }

    def cross_domain_inputs(self) -> dict[str, list[str]]:
        """The corpora aligner.cross_domain trains and tests on (the command takes them as JSON
        mappings, name -> file, from the section's options)."""
        c = self.run.aligner.cross_domain
        assert c is not None
        return {
            "corpora": list(c.corpora.values()),
            "dev": list(c.dev.values()),
            "synthetic": [c.synthetic] if c.synthetic else [],
            "encoder": self.encoder_input(),
        }

    def baseline_instances(self) -> str:
        b = self.run.baselines
        assert b is not None
        return b.instances or self.made_instances()

    def baseline_pairs(self) -> str:
        b = self.run.baselines
        assert b is not None
        return b.gold_pairs or self.made_pairs()

    def baseline_inputs(self) -> dict[str, list[str]]:
        b = self.run.baselines
        assert b is not None
        return {
            "instances": [self.baseline_instances()],
            "gold_pairs": [self.baseline_pairs()],
            "extra_text": list(b.extra_text),
            "encoder": self.encoder_input(),
        }

    # -- human evaluation: the crowd's files, or the simulated ones (demo)

    def human_results(self) -> str | None:
        """The crowd results file: the user's, the simulated one (demo), or None."""
        h = self.run.human_eval
        if not h:
            return None
        if h.results:
            return h.results
        return f"{self.res}/human_eval/results.simulated.csv" if h.simulate else None

    def human_results_input(self) -> list[str]:
        return [r for r in [self.human_results()] if r]

    def judgments_input(self) -> list[str]:
        """The imported judgments that train the neural filter, when there are any."""
        return [f"{self.res}/human_eval/judgments.csv"] if self.human_results() else []

    def span_results_input(self) -> list[str]:
        return [r for r in [self.span_results()] if r]

    def span_results(self) -> str | None:
        """The span-alignment answers: the user's, the simulated ones (demo), or None."""
        h = self.run.human_eval
        if not h:
            return None
        if h.span_results:
            return h.span_results
        return f"{self.res}/human_eval/span_results.simulated.csv" if h.simulate else None

    # -- Frame ID: the user's splits, or the imported corpus split by document

    def _frameid_file(self, part: str) -> str | None:
        f = self.run.frameid
        assert f is not None
        if f.train:
            return getattr(f, part)
        return f"{self.res}/frameid/split/{part}.parquet"

    def frameid_pool(self) -> str:
        """The Frame ID training pool (GECA learns its templates there too); with frameid off, GECA
        learns from the imported corpus instead."""
        if not self.run.frameid:
            return f"{self.res}/data/sentences.parquet"
        pool = self._frameid_file("train")
        assert pool is not None
        return pool

    def frameid_test(self) -> str:
        test = self._frameid_file("test")
        if test is None:
            raise ValueError("config: frameid.train is set, so frameid.test must be too")
        return test

    def _point_inputs(self, encoder: str, augmenter: str) -> dict[str, list[str]]:
        """What a Frame ID or argument-ID point reads: Frame ID's training part (the pool), test part
        and dev part (where there is one), the encoder, and the augmenter's examples (GECA makes its
        own on each sample)."""
        dev = self._frameid_file("dev")
        inputs = {
            "train": [self.frameid_pool()],
            "test": [self.frameid_test()],
            "dev": [dev] if dev else [],
            "encoder": local_model(encoder),
        }
        if augmenter not in (BASELINE, "geca"):
            inputs["examples"] = [f"{self.res}/augmenters/{augmenter}.parquet"]
        return inputs

    def frameid_point_inputs(self, augmenter: str) -> dict[str, list[str]]:
        f = self.run.frameid
        assert f is not None
        return {**self._point_inputs(f.encoder, augmenter), "lexicon": [f.lexicon] if f.lexicon else []}

    def stats_lexicon(self) -> list[str]:
        lexicon = self.run.stats.lexicon
        return [lexicon] if lexicon else []

    # -- which optional parts are on, and what they make (MADE_BY)

    def parts_on(self) -> dict[str, bool]:
        """Each optional part of MADE_BY: whether this config runs it."""
        run, a = self.run, self.run.aligner
        return {
            "evaluation": bool(a.evaluation),
            "selftrain": bool(a.evaluation and run.augmenters and run.augmenters.graph.selftrain),
            "systems": bool(a.systems),
            "cross_domain": bool(a.cross_domain),
            "baselines": bool(run.baselines),
            "augmenters": bool(run.augmenters),
            "frameid": bool(run.frameid),
            "argid": bool(run.argid),
            "human_eval": bool(run.human_eval),
            "human_results": bool(self.human_results()),
            "span_results": bool(self.span_results()),
        }

    def makes(self, path: str) -> bool:
        """Whether this run makes ``path`` (in its folder, or under it): the results of an optional part
        only when the part is on."""
        rel = os.path.relpath(path, self.res) if os.path.isabs(path) or path.startswith(self.res) else path
        on = self.parts_on()
        part = next((part for prefix, part in MADE_BY if rel.startswith(prefix)), None)
        return part is None or on[part]

    def _made(self, rels: Iterable[str]) -> list[str]:
        return [f"{self.res}/{rel}" for rel in rels if self.makes(rel)]

    def final_outputs(self) -> list[str]:
        """rule all's targets: the run's results and its report's pages."""
        return self._made(TARGETS) + self.report_pages()

    def report_tables(self) -> list[Table]:
        """The tables of the run's results that the report shows."""
        return [table for table in TABLES if self.makes(table.source)]

    def report_pages(self) -> list[str]:
        return [f"{self.res}/{t.page}" for t in self.report_tables()] + [f"{self.res}/report/{p}.html" for p in PAGES]

    def warning_inputs(self) -> dict[str, list[str]]:
        """The results whose warnings the warnings page collects, as named inputs."""
        return {
            "summaries": self._made(WARNING_SUMMARIES),
            "paraphrase": self.shard_stats_files("paraphrase"),
            "select": self.shard_stats_files("select"),
            "align": self.shard_stats_files("align"),  # the aligners' engines
            "per_iteration": [f"{self.res}/report/per_iteration.csv"],
            "aligner": [self.aligner_model()],
            "comparison": self._made([OPTIONAL_READS["comparison"]]),
            "curves": self._made([OPTIONAL_READS["curves"]]),
            "argid_curves": self._made(["argid/curves.csv"]),
            # the judgments are flagged on the page when they are simulated (the demo's)
            "simulated_judgments": self._made([OPTIONAL_READS["human_eval"]]) if self.simulated_judgments() else [],
        }

    def summary_inputs(self) -> dict[str, list[str]]:
        """What the summary page reads, as named inputs (an optional one is empty when not made)."""
        return {
            **{key: [f"{self.res}/{rel}"] for key, rel in SUMMARY_READS.items()},
            "aligner": [self.aligner_model()],
            "paraphraser": self.paraphraser_model_input(),  # its records say whether it is a toy
            **{key: self._made([rel]) for key, rel in SUMMARY_OPTIONAL.items()},
        }

    # -- the iterations

    def shards(self) -> list[str]:
        return [f"{j:03d}" for j in range(self.run.n_shards)]

    def iterations_dir(self) -> str:
        return f"{self.res}/iterations"

    def chain_shard(self, i: int | str, j: str) -> str:
        """Iteration i's output (CHAIN) for shard j; iteration 0 holds the seeds."""
        return shard_file(self.iterations_dir(), int(i), j, "chain")

    def per_stage_jobs(self) -> bool:
        """Whether each shard's iteration runs as a job per stage (``shard_jobs: iteration``) rather than
        one job per shard for every iteration (``chain``)."""
        return self.run.shard_jobs == "iteration"

    def iterate_options(self) -> str:
        """``spanaug iterate``'s stage options: each stage's settings (:func:`stage_options`) with its model."""
        each = stage_options(self.run)
        paraphrase = f"{each['paraphrase']} --model {shlex.quote(self.paraphraser_model())}"
        align = f"{each['align']} --model {shlex.quote(self.aligner_model())}"
        return " ".join(
            f"--{name}={shlex.quote(value)}"
            for name, value in [
                ("constraints", each["constraints"]),
                ("paraphrase", paraphrase),
                ("align", align),
                ("frame-elements", each["align_frame_elements"]),
            ]
        )

    def shard_pattern(self, name: str) -> str:
        """A per-stage rule's file ``name`` (a key of SHARD_FILES) of shard ``{j}``'s iteration ``{i}``."""
        return shard_file(self.iterations_dir(), "{i}", "{j}", name)

    def shard_chain_outputs(self) -> list[str]:
        """What a ``shard_jobs: chain`` job writes: every file of every iteration of shard ``{j}``."""
        return [
            shard_file(self.iterations_dir(), i, "{j}", name)
            for i in range(1, self.run.iterations + 1)
            for name in SHARD_FILES
        ]

    def seeds_chain(self, j: str) -> str:
        return self.chain_shard(0, j)

    def previous_chain(self, i: str, j: str) -> str:
        return self.chain_shard(int(i) - 1, j)

    def iteration_chain_shards(self, i: str) -> list[str]:
        return [self.chain_shard(i, j) for j in self.shards()]

    def iteration_outputs(self) -> list[str]:
        return [f"{self.iterations_dir()}/iter{i}.chain.parquet" for i in range(1, self.run.iterations + 1)]

    def shard_stats_files(self, stage: str) -> list[str]:
        """Every shard's statistics of ``stage`` (paraphrase, align, select) over the iterations."""
        return [
            shard_file(self.iterations_dir(), i, j, f"{stage}_stats")
            for i in range(1, self.run.iterations + 1)
            for j in self.shards()
        ]

    def decode_width(self) -> int:
        """Candidates decoded per request: the beam, or the samples."""
        p = self.run.paraphraser
        return p.beam_size if p.mode == "beam" else p.num_samples

    # -- Figure 8

    def _compared(self, augmenters: Iterable[str]) -> list[str]:
        """Of an experiment's augmenters, those with examples: with the augmenters section off (null),
        only GECA, which the Frame ID experiment runs on each sample itself."""
        return list(augmenters) if self.run.augmenters else [a for a in augmenters if a == "geca"]

    def frameid_augmenters(self) -> list[str]:
        """The augmenters Figure 8 compares."""
        return self._compared(self.run.frameid.augmenters) if self.run.frameid else []

    def _points(self, experiment: str, section: Any, augmenters: list[str]) -> list[str]:
        """An experiment's point results: without augmentation and with each augmenter, per fraction and
        seed of its config ``section`` (none when the section is off: its curves rule is never asked for)."""
        if not section:
            return []
        return [
            f"{self.res}/{experiment}/points/{augmenter}/f{float(fraction)}.s{seed}.json"
            for augmenter in [BASELINE, *augmenters]
            for fraction in section.fractions
            for seed in section.seeds
        ]

    def frameid_points(self) -> list[str]:
        return self._points("frameid", self.run.frameid, self.frameid_augmenters())

    # -- argument identification: on Frame ID's split, with and without the carried FEs

    def argid_augmenters(self) -> list[str]:
        """The augmenters the argument-ID experiment compares (their examples carry FEs)."""
        return self._compared(self.run.argid.augmenters) if self.run.argid else []

    def argid_point_inputs(self, augmenter: str) -> dict[str, list[str]]:
        """A point's files, as a Frame ID point's (Frame ID's split, the encoder, the examples), and the
        FrameNet release the section names."""
        a = self.run.argid
        assert a is not None
        if not self.run.frameid:
            raise ValueError("config: argid trains and tests on frameid's split: give frameid a section")
        return {**self._point_inputs(a.encoder, augmenter), "framenet": [a.framenet] if a.framenet else []}

    def argid_points(self) -> list[str]:
        return self._points("argid", self.run.argid, self.argid_augmenters())

    # -- what ran (the dataset card and the report say it)

    def is_demo(self, checkout: Path) -> bool:
        """A run on the bundled demo corpus (its report and card say that the numbers are mechanics only)."""
        demo = (checkout / "resources" / "demo").resolve()
        inputs = [Path(p).resolve() for p in self.run.data.inputs]
        return bool(inputs) and all(p == demo or demo in p.parents for p in inputs)

    def simulated_judgments(self) -> bool:
        h = self.run.human_eval
        return bool(h and h.simulate and not h.results)

    def threshold_description(self) -> str:
        """Where the trained aligner's null threshold comes from, as aligner training decides it."""
        t = self.run.aligner.train
        assert t is not None
        dev = [*t.dev, *t.word_aligned_dev]
        plan = threshold_plan(bool(dev), t.threshold_holdout, n_pairs=None)
        return describe_plan(plan, ", ".join(dev) or None, t.threshold_holdout)

    def aligner_corpora(self) -> list[str]:
        """Every file the run's aligner trains or tunes on (the dataset card gives each its licence)."""
        a = self.run.aligner
        t = a.train
        if a.model or not t:
            return []
        files = [*t.instances, *t.word_aligned] or [t.bitext]
        files += [*t.dev, *t.word_aligned_dev, *t.phrase_pairs, *t.extra_instances, *t.pretrain]
        files += [t.synthetic_lexicon] if t.synthetic_lexicon else []
        return list(dict.fromkeys(f for f in files if f))

    def run_description(self, checkout: Path) -> dict[str, Any]:
        """What ran, for the report's summary and the dataset card: data, models and the main settings."""
        run, p, a = self.run, self.run.paraphraser, self.run.aligner
        if p.train and p.train.init:
            paraphraser = f"{p.train.init}, fine-tuned in this run on {p.train.bitext}"
        elif p.train:
            paraphraser = (
                f"trained in this run on {p.train.bitext} (the paper's architecture, d_model {p.train.d_model})"
            )
        else:
            paraphraser = p.model
        decoding = (
            f"beam {p.beam_size}, top {p.return_top} aligned"
            if p.mode == "beam"
            else f"top-k sampling (k {p.top_k}), {p.num_samples} samples"
        )
        if a.model:
            aligner = f"{a.model} (its kind in its config.json)"
        else:
            assert a.train is not None
            data = ", ".join([*a.train.instances, *a.train.word_aligned]) or f"instances made from {a.train.bitext}"
            aligner = f"{a.kind} kind, trained in this run on {data} (null threshold {self.threshold_description()})"
        return {
            "run_name": run.run_name,
            "inputs": list(run.data.inputs),
            "format": run.data.format,
            "seeds_mode": run.seeds.mode,
            "iterations": run.iterations,
            "n_shards": run.n_shards,
            "paraphraser": paraphraser,
            "paraphraser_model": None if p.train else p.model,
            "paraphraser_bitext": p.train.bitext if p.train else None,
            "decoding": decoding,
            "aligner": aligner,
            "aligner_kind": None if a.model else a.kind,
            "aligner_corpora": self.aligner_corpora(),
            "encoder": a.encoder,
            "frame_elements": {k: getattr(run.frame_elements, k) for k in ("mode", "select", "require")},
            "demo": self.is_demo(checkout),
            "simulated_judgments": self.simulated_judgments(),
        }
