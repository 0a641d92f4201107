"""Fixtures: tiny random models built on the spot (tokenizers trained on the fly), shared data paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"

CORPUS = [
    "Abby bought a car from Robin last week .",
    "The company purchased steel from three suppliers .",
    "The children walked to school in the rain .",
    "My uncle gave up smoking last year .",
    "The minister said that taxes would rise .",
    "Scientists discovered a new kind of bird .",
    "She handed the letter to her friend .",
    "The workers stopped the machine at noon .",
]


def shared_file(name: str) -> Path:
    """A file of ../shared/data, or skip the test when the folder is absent."""
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"shared data {path} is absent (it sits beside the repository in CI only)")
    return path


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 2-layer BERT with a WordPiece vocabulary trained on a few sentences, saved to disk."""
    import torch
    from tokenizers import (
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    out = tmp_path_factory.mktemp("tiny_encoder")
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(CORPUS * 3, trainers.WordPieceTrainer(
        vocab_size=200, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(out)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(out)
    return str(out)


@pytest.fixture(scope="session")
def tiny_paraphraser(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random 1+1-layer BART with a SentencePiece-unigram vocabulary trained on the fly."""
    import torch

    from spanaug.pipeline.paraphraser.training import (
        ParaphraserConfig,
        build_model,
        train_tokenizer,
    )

    out = tmp_path_factory.mktemp("tiny_paraphraser")
    tokenizer = train_tokenizer(CORPUS * 3, vocab_size=120)
    torch.manual_seed(0)
    cfg = ParaphraserConfig(d_model=32, encoder_layers=1, decoder_layers=1, attention_heads=2, ffn_dim=64, max_positions=128)
    model = build_model(cfg, tokenizer)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)
