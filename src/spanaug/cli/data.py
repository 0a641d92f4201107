"""``spanaug import``, ``seeds``, ``shard`` and ``demo-corpus``: the corpus and the seeds."""

from __future__ import annotations

from spanaug.cli.options import command, emit
from spanaug.core.config import ImportSettings, SeedSettings
from spanaug.core.settings import setting, settings


@settings
class ImportFiles:
    out: str = setting(help="the imported sentences (SENTENCES Parquet)")
    stats: str | None = setting(None, "import statistics (JSON; default: standard output)")


@command("import", help="import a corpus into the sentences artifact")
def import_corpus(files: ImportFiles, data: ImportSettings) -> None:
    from spanaug.pipeline.importers import import_corpus

    emit(import_corpus(data, files.out).as_dict(), files.stats)


@settings
class SeedFiles:
    sentences: str = setting(help="the imported sentences")
    out: str = setting(help="the seeds (SENTENCES Parquet)")
    report: str | None = setting(None, "what was chosen (JSON; default: standard output)")


@command("seeds", help="select the seed rows")
def select_seeds(files: SeedFiles, seeds: SeedSettings) -> None:
    from spanaug.core import artifacts
    from spanaug.core.errors import InputError
    from spanaug.pipeline.seeds import select_seeds

    sentences = artifacts.read_table(files.sentences, artifacts.SENTENCES)
    if not sentences.num_rows:
        raise InputError(files.sentences, None, "holds no sentence to seed from")
    chosen, report = select_seeds(sentences, seeds)
    artifacts.write_table(chosen, files.out, artifacts.SENTENCES)
    emit(report, files.report)


@settings
class ShardFiles:
    seeds: str = setting(help="the seeds")
    out: list[str] = setting(help="one iteration-0 CHAIN shard per path")


@command("shard", help="split the seeds into iteration-0 shards")
def shard(files: ShardFiles) -> None:
    import logging

    from spanaug.pipeline.iterations import init_shards

    counts = init_shards(files.seeds, files.out)
    logging.getLogger(__name__).info("iteration 0: %d seeds in %d shards %s", sum(counts), len(counts), counts)


@settings
class DemoCorpusFiles:
    spec: str = setting(help="the corpus as YAML (see resources/demo/corpus.yaml)")
    out: str = setting(help="the FrameNet release directory to write")


@command("demo-corpus", help="write a FrameNet release directory from a YAML spec")
def demo_corpus(files: DemoCorpusFiles) -> None:
    from spanaug.demo.framenet_writer import write_release_from_yaml

    write_release_from_yaml(files.spec, files.out)
