"""Random-weight stand-ins for the seq2seq families the paraphrase stage supports.

Support for tests and benchmarks (``scripts/bench_gpu.py``, ``scripts/bench_paraphrase.py
--standin``), never used by the pipeline itself; it lives in the package so that scripts import it
without importing test code. They build T5, BART, Pegasus and Marian models with random weights
and tokenizers trained on the fly (nothing is downloaded), saved with ``save_pretrained`` so both
backends (transformers and CTranslate2) load them from disk like a real checkpoint:

* ``unigram``: SentencePiece unigram pieces with the ``▁`` word-start marker (T5, Pegasus, Marian);
* ``bytebpe``: byte-level BPE with the ``Ġ`` marker and no prefix space (BART, RoBERTa style);
* ``wordpiece``: WordPiece, continuation pieces marked ``##`` and no word-start marker at all.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence
from pathlib import Path

from spanaug.core.files import apply_umask_tree
from spanaug.core.provenance import write_standin_record

_WORD_START = "\u2581"  # the word-start marker of the pieces _wordpiece_vocab learns

#: family -> tokenizer kind used by the family tests
FAMILIES = {
    "t5": "unigram",
    "bart": "bytebpe",
    "pegasus": "unigram",
    "marian": "unigram",
    "bart-wordpiece": "wordpiece",
    "mt5": "unigram",
    "mbart": "bytebpe",
}


@dataclasses.dataclass
class Size:
    d_model: int = 32
    layers: int = 1
    heads: int = 2
    ffn: int = 64
    vocab_size: int | None = None  # model vocabulary; None: the tokenizer's size
    max_positions: int = 256


TINY = Size()
#: T5-base's shape (vocabulary 32,128) and a CPU-sized one with the same vocabulary.
T5_BASE = Size(d_model=768, layers=12, heads=12, ffn=3072, vocab_size=32128, max_positions=512)
T5_CPU = Size(d_model=256, layers=3, heads=4, ffn=1024, vocab_size=32128, max_positions=512)


def _unigram(texts: Sequence[str], vocab_size: int, specials: dict[str, int], pad_last: bool):
    import sentencepiece as spm
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    buf = io.BytesIO()
    ids = {
        "pad_id": specials.get("<pad>", -1) if not pad_last else -1,
        "eos_id": specials["</s>"],
        "unk_id": specials["<unk>"],
        "bos_id": specials.get("<s>", -1),
    }
    pieces = {"pad_piece": "<pad>", "eos_piece": "</s>", "unk_piece": "<unk>", "bos_piece": "<s>"}
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=buf,
        vocab_size=vocab_size,
        model_type="unigram",
        hard_vocab_limit=False,
        minloglevel=2,
        **ids,
        **pieces,
    )
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    vocab = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    if pad_last:
        vocab.append(("<pad>", 0.0))
    tok = Tokenizer(models.Unigram(vocab, unk_id=sp.unk_id()))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(r"\s+"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    special = [p for p, _ in vocab if p in ("<pad>", "</s>", "<unk>", "<s>")]
    tok.add_special_tokens(special)
    eos = tok.token_to_id("</s>")
    tok.post_processor = TemplateProcessing(single="$A </s>", special_tokens=[("</s>", eos)])
    kwargs = {"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>"}
    if "<s>" in special:
        kwargs["bos_token"] = "<s>"
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def _bytebpe(texts: Sequence[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        list(texts),
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )


def _wordpiece_vocab(texts: Sequence[str], vocab_size: int, specials: Sequence[str], tok) -> dict[str, int]:
    """A WordPiece vocabulary for ``tok`` (its normaliser and pre-tokeniser set) learnt from ``texts``,
    the same in every process.

    tokenizers' ``WordPieceTrainer`` breaks ties between equally frequent merges by ids it gives its
    ``##`` pieces in hash order, so each process learnt another vocabulary and a random model over
    it decoded otherwise (a test passed or failed by chance). Its BPE trainer, given the alphabet,
    is deterministic: it learns pieces of the words marked ``▁`` at their start, and the pieces
    become WordPiece's, word-initial or ``##``-continuing; every character is kept in both roles so
    that no word falls to the unknown token."""
    from tokenizers import Tokenizer, models, trainers

    words = [w for t in texts for w, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(t))]
    alphabet = sorted({c for w in words for c in w})
    bpe = Tokenizer(models.BPE())
    bpe.train_from_iterator(
        [_WORD_START + w for w in words],
        trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=[_WORD_START, *alphabet], show_progress=False),
    )
    learnt = sorted(bpe.get_vocab().items(), key=lambda item: item[1])
    pieces = [p[1:] if p.startswith(_WORD_START) else "##" + p for p, _ in learnt if p != _WORD_START]
    pieces += [*alphabet, *("##" + c for c in alphabet)]
    return {p: i for i, p in enumerate(dict.fromkeys([*specials, *pieces]))}


def _wordpiece(texts: Sequence[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="<unk>"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.model = models.WordPiece(
        _wordpiece_vocab(texts, vocab_size, ["<s>", "<pad>", "</s>", "<unk>"], tok), unk_token="<unk>"
    )
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )


def train_tokenizer(kind: str, texts: Sequence[str], vocab_size: int = 160, family: str = "t5"):
    """A fast tokenizer of ``kind`` trained on ``texts``, with the special-token layout of ``family``."""
    if kind == "unigram":
        if family == "marian":  # Marian: </s> 0, <unk> 1, <pad> last; no <s>
            return _unigram(texts, vocab_size, {"</s>": 0, "<unk>": 1}, pad_last=True)
        return _unigram(texts, vocab_size, {"<pad>": 0, "</s>": 1, "<unk>": 2}, pad_last=False)
    if kind == "bytebpe":
        return _bytebpe(texts, vocab_size)
    if kind == "wordpiece":
        return _wordpiece(texts, vocab_size)
    raise ValueError(f"unknown tokenizer kind {kind!r}")


def build_model(family: str, tokenizer, size: Size = TINY, seed: int = 0):
    """A random seq2seq model of ``family`` over ``tokenizer``'s ids."""
    import torch
    import transformers as tf

    torch.manual_seed(seed)
    vocab = size.vocab_size or len(tokenizer)
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    common = {"vocab_size": vocab, "pad_token_id": pad, "eos_token_id": eos}
    family = family.split("-")[0]
    if family in ("t5", "mt5"):
        # mT5: T5's layers with a gated-GELU feed-forward, and (transformers 5) the output layer tied
        # to the embeddings without T5's d_model^-0.5 scaling.
        config = (tf.MT5Config if family == "mt5" else tf.T5Config)(
            d_model=size.d_model,
            d_kv=size.d_model // size.heads,
            d_ff=size.ffn,
            num_layers=size.layers,
            num_decoder_layers=size.layers,
            num_heads=size.heads,
            relative_attention_num_buckets=8 if size is TINY else 32,
            dropout_rate=0.0,
            decoder_start_token_id=pad,
            **common,
        )
        model = (tf.MT5ForConditionalGeneration if family == "mt5" else tf.T5ForConditionalGeneration)(config)
        if family == "mt5":  # unscaled, unit-variance embeddings give logits so large that beams tie
            with torch.no_grad():
                model.shared.weight.mul_(size.d_model**-0.5)
    else:
        layers = dict(
            d_model=size.d_model,
            encoder_layers=size.layers,
            decoder_layers=size.layers,
            encoder_attention_heads=size.heads,
            decoder_attention_heads=size.heads,
            encoder_ffn_dim=size.ffn,
            decoder_ffn_dim=size.ffn,
            max_position_embeddings=size.max_positions,
            dropout=0.0,
            scale_embedding=True,
            forced_eos_token_id=None,
            **common,
        )
        if family == "bart":
            config = tf.BartConfig(
                bos_token_id=tokenizer.bos_token_id, decoder_start_token_id=eos, forced_bos_token_id=None, **layers
            )
            model = tf.BartForConditionalGeneration(config)
        elif family == "mbart":  # BART with pre-norm layers and a last norm in each stack
            config = tf.MBartConfig(decoder_start_token_id=eos, forced_bos_token_id=None, **layers)
            model = tf.MBartForConditionalGeneration(config)
        elif family == "pegasus":
            config = tf.PegasusConfig(decoder_start_token_id=pad, **layers)
            model = tf.PegasusForConditionalGeneration(config)
        elif family == "marian":
            config = tf.MarianConfig(decoder_start_token_id=pad, decoder_vocab_size=vocab, **layers)
            model = tf.MarianMTModel(config)
        else:
            raise ValueError(f"unknown family {family!r}")
    gen = model.generation_config
    for key in ("forced_bos_token_id", "forced_eos_token_id"):
        setattr(gen, key, None)
    if family == "marian":
        gen.bad_words_ids = [[pad]]  # as in released Marian models: <pad> only starts the decoder
    return model.eval()


def save_standin(
    out: Path | str, family: str, texts: Sequence[str], size: Size = TINY, vocab_size: int = 160, seed: int = 0
) -> str:
    """Train a tokenizer, build a random ``family`` model, save both to ``out``; returns the path."""
    out = Path(out)
    kind = FAMILIES.get(family, "unigram")
    tokenizer = train_tokenizer(kind, texts, vocab_size, family=family.split("-")[0])
    model = build_model(family, tokenizer, size, seed)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    write_standin_record(out, f"a random {family} paraphraser, spanaug.demo.standins")
    apply_umask_tree(out)  # safetensors writes its weights 0600
    return str(out)


def bert_tokenizer(texts: Sequence[str], vocab_size: int):
    """A cased WordPiece tokenizer with BERT's special tokens and [CLS] A [SEP] B [SEP] template,
    trained on ``texts``: the vocabulary of every random BERT encoder that stands in for a real one
    (the rehearsal's aligner encoder, the tests' tiny encoder, the GPU benchmark's)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.model = models.WordPiece(_wordpiece_vocab(texts, vocab_size, specials, tok), unk_token="[UNK]")
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def save_encoder_standin(out: Path | str, texts: Sequence[str], size: Size = TINY, vocab_size: int = 2000) -> str:
    """A random BERT encoder with a cased WordPiece vocabulary trained on ``texts``, saved to ``out``.

    A fast stand-in for the aligner's frozen encoder (``make rehearsal``): the pipeline loads it as it
    loads bert-base-cased, from disk, and its cost is that of a few small layers."""
    import torch
    from transformers import BertConfig, BertModel

    out = Path(out)
    fast = bert_tokenizer(texts, vocab_size)
    fast.save_pretrained(out)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=fast.backend_tokenizer.get_vocab_size(),
        hidden_size=size.d_model,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        intermediate_size=size.ffn,
        max_position_embeddings=size.max_positions,
    )
    BertModel(config).save_pretrained(out)
    write_standin_record(out, "a random BERT encoder, spanaug.demo.standins")
    apply_umask_tree(out)  # safetensors writes its weights 0600
    return str(out)


# ---------------------------------------------------------------- decoder-only stand-ins

#: Decoder-only families (``AutoModelForCausalLM``) and their tokenizers' special-token layouts:
#: Llama (byte-level BPE, a BOS), Qwen2 (byte-level BPE, no BOS, a ChatML chat template) and Gemma 3
#: (pieces with the ``▁`` marker, newlines pieces of their own, a BOS).
CAUSAL_FAMILIES = ("llama", "gemma3", "qwen2")

#: A minimal ChatML template (Qwen2's layout), for the chat-template path.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def causal_tokenizer(family: str, texts: Sequence[str], vocab_size: int = 300):
    """A fast tokenizer in ``family``'s layout, trained on ``texts`` (which should hold every character
    a test will write: newlines are kept, not normalised away)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if family == "gemma3":
        specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex("\n+"), "isolated"), pre_tokenizers.Metaspace("▁", prepend_scheme="never")]
        )
        tok.decoder = decoders.Metaspace("▁", prepend_scheme="never")
        alphabet: list[str] = sorted({c for t in texts for c in t.replace(" ", "▁")})
    else:
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] if family == "qwen2" else ["<s>", "</s>", "<unk>"]
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok.train_from_iterator(
        list(texts),
        trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=specials, initial_alphabet=alphabet, show_progress=False
        ),
    )
    if family == "qwen2":
        return PreTrainedTokenizerFast(
            tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHATML
        )
    bos, eos, pad = ("<bos>", "<eos>", "<pad>") if family == "gemma3" else ("<s>", "</s>", None)
    tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, tok.token_to_id(bos))])
    kwargs = {"bos_token": bos, "eos_token": eos, "unk_token": "<unk>"}
    if pad:
        kwargs["pad_token"] = pad
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def build_causal_model(family: str, tokenizer, seed: int = 0, hidden: int = 32, layers: int = 2):
    """A random decoder-only model of ``family`` over ``tokenizer``'s ids."""
    import torch
    import transformers as tf

    torch.manual_seed(seed)
    common = {
        "vocab_size": len(tokenizer),
        "hidden_size": hidden,
        "intermediate_size": 2 * hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 1024,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "tie_word_embeddings": True,
    }
    if family == "llama":
        model = tf.LlamaForCausalLM(tf.LlamaConfig(**common))
    elif family == "qwen2":
        model = tf.Qwen2ForCausalLM(tf.Qwen2Config(**common))
    elif family == "gemma3":
        config = tf.Gemma3TextConfig(head_dim=16, sliding_window=512, query_pre_attn_scalar=16, **common)
        model = tf.Gemma3ForCausalLM(config)
    else:
        raise ValueError(f"unknown decoder-only family {family!r}")
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model.eval()


def save_causal(family: str, texts: Sequence[str], out: Path | str, vocab_size: int = 300, seed: int = 0) -> Path:
    """A random decoder-only ``family`` model and its tokenizer trained on ``texts``, saved to ``out``."""
    out = Path(out)
    tokenizer = causal_tokenizer(family, texts, vocab_size)
    model = build_causal_model(family, tokenizer, seed)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def write_tiny_gguf(path: Path | str, texts: Sequence[str], vocab_size: int = 300, seed: int = 0) -> Path:
    """A random tiny Llama and its byte-level BPE tokenizer (trained on ``texts``) written as a GGUF
    file with the ``gguf`` package, in the layout llama.cpp's converter writes (float32 tensors)."""
    import json

    import gguf
    import numpy as np

    tokenizer = causal_tokenizer("llama", texts, vocab_size)
    # transformers' GGUF reader gives a byte-level tokenizer GPT-2's <|endoftext|> unless the file has it
    tokenizer.add_special_tokens({"pad_token": "<|endoftext|>"})
    model = build_causal_model("llama", tokenizer, seed)
    config = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("spanaug tiny llama")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("llama-bpe")
    tokens = [t for t, _ in sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])]
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t in tokenizer.all_special_tokens else 1 for t in tokens])
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    writer.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in merges])
    writer.add_bos_token_id(tokenizer.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_unk_token_id(tokenizer.unk_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_add_bos_token(True)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}
    parts = {
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
    }
    for i in range(config.num_hidden_layers):
        names.update({f"model.layers.{i}.{hf}.weight": f"blk.{i}.{name}.weight" for hf, name in parts.items()})
    weights = model.state_dict()
    for hf, name in names.items():
        writer.add_tensor(name, weights[hf].numpy().astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(path)
