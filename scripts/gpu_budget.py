"""The run's GPU budget, as arithmetic: no timing, no torch.

``bench_gpu.py`` measures rates on the device at hand (the paraphrase stage's new tokens/s, the
aligner's encoder inputs/s, an encoder's training and encoding examples/s) and this module turns
them into GPU-hours: the expansion (decoding, aligning, the chain jobs' CPU stages and every job's
fixed cost) and each other GPU rule of the workflow, with the job counts the run's plan gives.

The rules costed are those of ``workflow/rules/*.smk`` with ``**GPU`` resources
(:func:`gpu_rules`), so a new GPU rule shows up as not estimated instead of being left out; their
job counts come from :class:`spanaug.workflow.plan.Plan` (:func:`planned_jobs`), as the workflow's
own.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable
from pathlib import Path

from spanaug.core.config import FrameElementSettings, RunConfig
from spanaug.pipeline.aligner.loading import aligner_class
from spanaug.pipeline.aligner.stage import fes_on_chosen_beams_only

#: Annotated sentences of full FrameNet 1.7 the expansion seeds: one a (sentence, target) annotation
#: set, exemplars and full text, as ``spanaug import`` reads them with config/config.yaml's data
#: settings (parts: exemplar and fulltext; at most 80 tokens).
SEEDS = 198_368
#: Where :data:`SEEDS` comes from: it cannot be counted here (the FrameNet 1.7 release is not on this
#: machine; ../shared/data holds its dev split only), and the project's history records no source.
SEEDS_SOURCE = (
    "the project's figure since commit 09170aa (scripts/bench_gpu.py, 2026-11-22), entered without a "
    "source and not derivable here (the FN1.7 release is not on this machine, only its dev split); of it, "
    "open-SESAME's FN1.7 full-text splits hold 28,377 annotations (train 19,391, dev 2,272, test 6,714), "
    "which leaves 169,991 for the exemplars. Count it with `spanaug import` on data/fndata-1.7 and pass "
    "--seeds N"
)
#: FrameNet 1.7's full-text annotations (open-SESAME's splits of Das and Smith's documents; the dev
#: count, 2,272, is ../shared/data/README.md's): the pool Frame ID and argument ID split (parts: fulltext).
FULLTEXT_ANNOTATIONS = 19_391 + 2_272 + 6_714
ALIGNED_BEAMS = 3
#: The shard counts the projection prints side by side (config/config.yaml's n_shards is projected).
SHARD_CHOICES = (4, 8, 16, 32, 64)
#: Span instances and sentence pairs of the word-aligned corpora config/config.yaml trains the
#: aligner on (../shared/data/README.md: Edinburgh++, MultiMWA-MTRef, MultiMWA-Wiki training parts).
WORD_ALIGNED = {"edinburgh": (2_358, 714), "mtref": (8_882, 2_398), "wiki": (1_551, 2_514)}
#: The development parts' span instances (MTRef, Wiki).
WORD_ALIGNED_DEV = 2_728 + 406


def harmonic_mean(rates: Iterable[float]) -> float:
    """The mean rate of equal amounts of work done at each of ``rates``: their times add, so it is
    the harmonic mean (the arithmetic mean overstates it whenever the rates differ)."""
    rates = list(rates)
    if not rates or min(rates) <= 0:
        raise ValueError(f"rates must be positive, got {rates}")
    return len(rates) / sum(1 / r for r in rates)


def encoder_inputs_per_request(kind: str, placed: float, fe: FrameElementSettings, aligned_beams: int) -> float:
    """Encoder inputs the align stage spends on one request's ``aligned_beams`` beams, with ``placed``
    FEs to place per sentence: one per beam where a pair's encoding serves all its spans (the paper
    kind); where each span is an input of its own (the cross kind), one per beam's trigger and one
    per FE placed, on every beam or, where selection reads the trigger alone, on the chosen beam
    (``align_rows``)."""
    aligner = aligner_class(kind)
    if not aligner.encodes_each_span or fe.mode != "align":
        return float(aligned_beams)
    beams_with_fes = 1 if fes_on_chosen_beams_only(aligner, fe) else aligned_beams
    return aligned_beams + placed * beams_with_fes


# ---------------------------------------------------------------- the expansion


@dataclasses.dataclass(frozen=True)
class ExpansionHours:
    """The expansion's GPU-hours by part."""

    requests: int
    decode: float
    align: float
    cpu_stages: float = 0.0
    jobs: int = 0
    fixed: float = 0.0

    @property
    def compute(self) -> float:
        """What grows with the requests: decoding, aligning and the chain jobs' CPU stages."""
        return self.decode + self.align + self.cpu_stages

    @property
    def total(self) -> float:
        return self.compute + self.fixed


def project_hours(
    decode_tokens_per_s: float,
    tokens_per_request: float,
    pairs_per_s: float,
    inputs_per_request: float,
    seeds: int,
    iterations: int,
) -> ExpansionHours:
    """Hours for ``seeds`` x ``iterations`` paraphrase requests: decoding ``tokens_per_request`` new
    tokens each (beam search runs a step per output token, so its cost follows the outputs' summed
    length) at ``decode_tokens_per_s``, then aligning ``inputs_per_request`` encoder inputs each
    (:func:`encoder_inputs_per_request`) at ``pairs_per_s``."""
    requests = seeds * iterations
    return ExpansionHours(
        requests=requests,
        decode=requests * tokens_per_request / decode_tokens_per_s / 3600,
        align=requests * inputs_per_request / pairs_per_s / 3600,
    )


def job_count(n_shards: int, iterations: int, chain: bool) -> int:
    """GPU jobs of the expansion: one a shard (``shard_jobs: chain``, ``spanaug iterate`` over every
    iteration), or one a shard's iteration (``iteration``: its paraphrase and align, grouped)."""
    return n_shards if chain else n_shards * iterations


def jobs_hours(jobs: int, seconds_per_job: float) -> float:
    """The jobs' fixed cost: what each pays before its first sentence and after its last."""
    return jobs * seconds_per_job / 3600


def with_jobs(
    compute: ExpansionHours,
    n_shards: int,
    iterations: int,
    chain: bool,
    seconds_per_job: float,
    cpu_s_per_request: float,
) -> ExpansionHours:
    """``compute`` with the jobs' fixed cost, and for chain jobs the CPU stages (constraint expansion
    and selection) that run inside the GPU job while its GPU waits."""
    jobs = job_count(n_shards, iterations, chain)
    return dataclasses.replace(
        compute,
        cpu_stages=compute.requests * cpu_s_per_request / 3600 if chain else 0.0,
        jobs=jobs,
        fixed=jobs_hours(jobs, seconds_per_job),
    )


def hours_by_shards(
    compute_hours: float, iterations: int, chain: bool, seconds_per_job: float, shards: Iterable[int] = SHARD_CHOICES
) -> dict[int, float]:
    """The expansion's hours for each shard count: the compute is the same, the jobs' fixed cost grows."""
    return {n: compute_hours + jobs_hours(job_count(n, iterations, chain), seconds_per_job) for n in shards}


# ---------------------------------------------------------------- the other GPU rules


def gpu_rules(rules_dir: Path) -> list[str]:
    """The workflow's rules with GPU resources (``**GPU`` in their ``resources``), in file order."""
    found: list[str] = []
    for path in sorted(rules_dir.glob("*.smk")):
        rule = None
        for line in path.read_text().splitlines():
            head = re.match(r"\s*rule (\w+):", line)
            if head:
                rule = head.group(1)
            elif rule and line.strip() == "**GPU," and rule not in found:
                found.append(rule)
    return found


def planned_jobs(run: RunConfig, res: str = "results") -> dict[str, int]:
    """Jobs of each GPU rule the run's plan makes (0: the rule is off in this config)."""
    from spanaug.workflow.plan import Plan

    plan = Plan(run, res)
    outputs = set(plan.final_outputs())
    chain = not plan.per_stage_jobs()
    per_stage = 0 if chain else run.n_shards * run.iterations
    return {
        "train_paraphraser": int(plan.paraphraser_model() == f"{res}/models/paraphraser"),
        "train_aligner": int(plan.aligner_model() == f"{res}/models/aligner"),
        "paraphrase": per_stage,
        "align": per_stage,
        "iterate_shard": run.n_shards if chain else 0,
        "align_ablation": sum(bool(re.fullmatch(rf"{res}/aligner_eval/[^/]+/ablation\.csv", o)) for o in outputs),
        "compare_aligners": int(f"{res}/aligner_eval/comparison.csv" in outputs),
        "align_systems": int(f"{res}/aligner_eval/systems/systems.csv" in outputs),
        "align_cross_domain": int(f"{res}/aligner_eval/cross_domain/cross_domain.csv" in outputs),
        "frameid_point": len(plan.frameid_points()),
        "argid_point": len(plan.argid_points()),
    }


#: The expansion's rules: costed by :func:`project_hours`, not by the training model below.
EXPANSION_RULES = ("paraphrase", "align", "iterate_shard")


@dataclasses.dataclass(frozen=True)
class TrainingRates:
    """Examples/s of a random encoder of the configured size on the device, measured by
    ``bench_gpu.py``: a forward pass without gradients (frozen encoders, evaluation), a training
    step through every layer (argument ID's fine-tuned encoder), and one through the top
    ``tune_layers`` layers on sentence pairs (the cross aligner)."""

    encode: float
    tune_all: float
    tune_top: float


@dataclasses.dataclass(frozen=True)
class RuleHours:
    """One GPU rule's estimate: its jobs, hours a job, and how the figure was made."""

    rule: str
    jobs: int
    hours_per_job: float
    basis: str

    @property
    def hours(self) -> float:
        return self.jobs * self.hours_per_job


def training_hours(
    trained: float, train_rate: float, encoded: float, encode_rate: float, cap_hours: float | None = None
) -> float:
    """Hours of ``trained`` examples x epochs of training steps at ``train_rate`` and ``encoded``
    examples of forward passes at ``encode_rate``, at most ``cap_hours`` (a time limit the rule's
    settings put on its training)."""
    hours = (trained / train_rate + encoded / encode_rate) / 3600
    return min(hours, cap_hours) if cap_hours is not None else hours


def _cap(minutes: float | None, trainings: int = 1) -> float | None:
    return None if minutes is None else trainings * minutes / 60


def _cross_recipe_instances(corpora: Iterable[str], phrases_per_pair: int, reversed_: bool) -> int:
    """Training instances a cross aligner takes from the word-aligned ``corpora``: their span
    instances and up to ``phrases_per_pair`` phrase pairs a sentence pair, doubled when read backwards too."""
    spans = sum(WORD_ALIGNED[c][0] for c in corpora)
    phrases = sum(phrases_per_pair * WORD_ALIGNED[c][1] for c in corpora)
    return (spans + phrases) * (2 if reversed_ else 1)


def rule_hours(
    run: RunConfig, jobs: dict[str, int], rates: TrainingRates, seeds: int, augmented_per_seed: float
) -> list[RuleHours]:
    """The GPU rules other than the expansion's, each from its training and encoding work under
    ``run``'s settings and the measured ``rates``. Every figure is an estimate: the work is counted
    from the settings and the corpora's sizes, the rates are a random encoder's of the configured size.
    ``augmented_per_seed``: the examples an augmenter adds per training annotation."""
    out = []
    train = run.aligner.train
    cross = train.cross if train else None
    if jobs.get("train_aligner"):
        if run.aligner.kind == "cross" and cross is not None:
            corpora = list(WORD_ALIGNED)
            instances = _cross_recipe_instances(corpora, train.phrase_max_per_pair, train.reversed)
            # align synthetic: each seed's trigger rewritten as another unit of its frame, both ways.
            pretrain = 2 * seeds * cross.pretrain_epochs if train.synthetic_lexicon else 0
            cap = _cap(cross.max_minutes)  # the time limit holds for pre-training and training each
            dev = WORD_ALIGNED_DEV * cross.epochs
            uncapped = training_hours(instances * cross.epochs + pretrain, rates.tune_top, dev, rates.encode)
            hours = training_hours(pretrain, rates.tune_top, 0, rates.encode, cap) + training_hours(
                instances * cross.epochs, rates.tune_top, dev, rates.encode, cap
            )
            basis = (
                f"{instances:,} instances (span instances and phrase pairs of {', '.join(corpora)}"
                f"{', reversed' if train.reversed else ''}) x {cross.epochs} epochs"
                + (f" + {pretrain:,} synthetic pre-training instances (two a seed, at most)" if pretrain else "")
                + f", top {cross.tune_layers} layers tuned: {uncapped:.2f} h"
                + (f", max_minutes {cross.max_minutes:g} caps each phase" if hours < uncapped else "")
            )
            out.append(RuleHours("train_aligner", jobs["train_aligner"], hours, basis))
        else:
            instances = sum(spans for spans, _ in WORD_ALIGNED.values())
            hours = training_hours(0, rates.tune_all, instances + WORD_ALIGNED_DEV, rates.encode)
            basis = f"{instances:,} instances encoded once by the frozen encoder (the head's epochs not counted)"
            out.append(RuleHours("train_aligner", jobs["train_aligner"], hours, basis))
    if jobs.get("align_ablation"):
        # The frozen encoder's outputs are shared by every row (evaluation.aligner_ablation): one pass.
        instances = sum(spans for spans, _ in WORD_ALIGNED.values())
        hours = training_hours(0, rates.tune_all, instances, rates.encode)
        basis = (
            f"one frozen-encoder pass over the held-out data, assumed {instances:,} instances (the size of the "
            "word-aligned corpora's; aligner.evaluation.data is not here); the rows' heads not counted"
        )
        out.append(RuleHours("align_ablation", jobs["align_ablation"], hours, basis))
    if jobs.get("compare_aligners"):
        # DiscAlign and the span aligner both read a frozen encoder (DiscAlign caches its outputs).
        spans, pairs = WORD_ALIGNED["edinburgh"]
        hours = training_hours(0, rates.tune_all, 2 * pairs + spans, rates.encode)
        basis = (
            f"frozen-encoder passes: DiscAlign's {pairs:,} sentence pairs (cached, both sides) and the span "
            f"aligner's {spans:,} instances; the heads' epochs not counted; fast_align runs on the CPU"
        )
        out.append(RuleHours("compare_aligners", jobs["compare_aligners"], hours, basis))
    if jobs.get("align_cross_domain") and run.aligner.cross_domain:
        cd = run.aligner.cross_domain
        recipe = cd.cross or cross
        epochs = recipe.epochs if recipe else cd.epochs
        sets = [list(WORD_ALIGNED) if s == "all" else [s] for s in cd.train_sets]
        trained = sum(
            _cross_recipe_instances([c for c in s if c in WORD_ALIGNED], cd.phrase_max_per_pair, cd.reversed) * epochs
            for s in sets
        )
        tested = len(sets) * sum(spans for spans, _ in WORD_ALIGNED.values()) * cd.test_share
        cap = _cap(recipe.max_minutes, len(sets)) if recipe else None
        hours = training_hours(trained, rates.tune_top, tested, rates.encode, cap)
        basis = (
            f"{len(sets)} cross trainings ({', '.join(cd.train_sets)}): {trained:,} instances x epochs in all, "
            f"each tested on every corpus's test share"
        )
        out.append(RuleHours("align_cross_domain", jobs["align_cross_domain"], hours, basis))
    if jobs.get("align_systems") and run.aligner.systems:
        rows = len(run.aligner.systems.rows)
        single = next((r.hours_per_job for r in out if r.rule == "train_aligner"), 0.0)
        basis = f"{rows} systems, each as long as the production aligner's training"
        out.append(RuleHours("align_systems", jobs["align_systems"], rows * single, basis))
    out += _point_hours(run, jobs, rates, augmented_per_seed)
    return out


def _point_hours(run: RunConfig, jobs: dict[str, int], rates: TrainingRates, per_seed: float) -> list[RuleHours]:
    """Frame ID and argument-ID points: each trains on a share of Frame ID's training pool (full
    text) plus, with an augmenter, its examples of the sample, and scores dev and test. A point's
    hours here are the mean over the configured fractions and augmenters."""
    out = []
    f = run.frameid
    if f is None:
        return out
    pool = FULLTEXT_ANNOTATIONS * (1 - f.dev_share - f.test_share)
    held = FULLTEXT_ANNOTATIONS * (f.dev_share + f.test_share)
    for rule, section in (("frameid_point", f), ("argid_point", run.argid)):
        if not jobs.get(rule) or section is None:
            continue
        augmenters = ["none", *(section.augmenters if run.augmenters else [])]
        mean_fraction = sum(section.fractions) / len(section.fractions)
        share_augmented = (len(augmenters) - 1) / len(augmenters)
        sample = pool * mean_fraction * (1 + per_seed * share_augmented)
        if rule == "frameid_point":  # a frozen encoder: every sentence encoded once, then the head's epochs
            hours = training_hours(0, rates.tune_all, sample + held, rates.encode)
            basis = (
                f"frozen encoder: {sample:,.0f} training annotations on average (mean fraction {mean_fraction:.2f} of "
                f"{pool:,.0f}, {per_seed:g} augmented examples a seed with an augmenter) and {held:,.0f} dev and "
                "test encoded once; the head's epochs not counted"
            )
        else:
            tuned = getattr(section, "finetune", True)
            train_rate = rates.tune_all if tuned else rates.encode
            hours = training_hours(
                sample * section.epochs, train_rate, FULLTEXT_ANNOTATIONS * f.dev_share * section.epochs, rates.encode
            )
            basis = (
                f"{sample:,.0f} training annotations on average x at most {section.epochs} epochs, encoder "
                f"{'fine-tuned' if tuned else 'frozen'}, dev scored each epoch (early stopping may end sooner)"
            )
        out.append(RuleHours(rule, jobs[rule], hours, basis))
    return out


def uncosted(rules: Iterable[str], jobs: dict[str, int], costed: Iterable[str]) -> list[str]:
    """GPU rules the run runs (or the plan does not know) that no estimate covers."""
    covered = set(costed) | set(EXPANSION_RULES)
    return [r for r in rules if r not in covered and jobs.get(r, 1) > 0]


def run_hours(expansion: float, rules: Iterable[RuleHours]) -> float:
    """The run's GPU-hours: the expansion's and every other GPU rule's."""
    return expansion + math.fsum(r.hours for r in rules)
