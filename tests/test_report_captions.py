"""The report's texts (workflow/report/*.rst) render as Snakemake renders them, markup and all."""

import dataclasses

import pytest
import yaml
from conftest import REPO

from spanaug.core.config import load_run_config

jinja2 = pytest.importorskip("jinja2")
docutils_core = pytest.importorskip("docutils.core")


def _configs():
    production = yaml.safe_load((REPO / "config/config.yaml").read_text())
    trained = {
        **production,
        "data": {"inputs": ["corpus a", "corpus-b"]},
        "paraphraser": {"train": {"bitext": "b.tsv"}},
    }
    for raw in (yaml.safe_load((REPO / "config/demo.yaml").read_text()), production, trained):
        yield dataclasses.asdict(load_run_config(raw))


def _render(path, config):
    """Jinja as Snakemake's report sets it up (trim_blocks, lstrip_blocks), then docutils to HTML."""

    class Snakemake:
        pass

    Snakemake.config = config
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    text = env.from_string(path.read_text()).render(snakemake=Snakemake, files=[], categories={})
    return docutils_core.publish_parts(text, writer="html", settings_overrides={"report_level": 5})["html_body"]


@pytest.mark.parametrize("path", sorted((REPO / "workflow/report").glob("*.rst")), ids=lambda p: p.name)
def test_every_caption_renders_its_markup(path):
    for config in _configs():
        html = _render(path, config)
        assert "``" not in html and "system-message" not in html, html[:1500]


def test_the_landing_text_names_the_run_as_literals():
    *_, trained = _configs()
    html = _render(REPO / "workflow/report/workflow.rst", trained)
    for literal in ("corpus a", "corpus-b", "b.tsv", "bert-base-cased"):
        assert f">{literal}<" in html.replace('<span class="pre">', "").replace("</span>", "")
