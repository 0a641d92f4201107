"""Stand-in models and demo corpora: random-weight seq2seq models for tests and benchmarks, and the
FrameNet release writer that builds the demo corpus and the importer's test data. Never used by the
pipeline's stages themselves (only ``spanaug data demo-corpus`` and tests, scripts, benchmarks)."""
