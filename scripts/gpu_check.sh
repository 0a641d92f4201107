#!/usr/bin/env bash
# The GPU path on one GPU node, in one command that fetches nothing (about 10 minutes on one H100):
#
#   scripts/gpu_check.sh [OUT_DIR]        # default OUT_DIR: results/gpu_check
#
# 1. the test modules that exercise models, on the GPU (device auto), in parallel workers;
# 2. scripts/bench_gpu.py: decoding with hf and static under the constraint sets of iterations
#    1, 5 and 10, the aligners, and the projection for full FrameNet;
# 3. the demo's trained paraphraser and aligner (`make demo` first, or DEMO=DIR holding
#    models/paraphraser, models/aligner and iterations/iter1/shard000.requests.parquet) through
#    `spanaug paraphrase` and `spanaug align paraphrases` on one shard, on cuda and on cpu, and
#    how many outputs agree (scripts/compare_shards.py);
# 4. scripts/profile_decode.py: one decode batch, unconstrained and under iteration 10's constraints,
#    under torch.profiler (GPU busy share, steps, graph captures, the costliest kernels);
# 5. scripts/bench_processor.py: the constraint processor alone on one 96-sentence batch (its
#    kernels and time per step at iterations 1, 5 and 10);
# 6. scripts/bench_causal.py: decoder-only paraphrasers' beam search at Gemma 3 270M's and Qwen2.5
#    1.5B's shapes (random weights), under iterations 1, 5 and 10, against generate, and projected.
#
# Every figure is printed with the device's name; logs go to OUT_DIR. Python: PYTHON, else
# .venv-gpu/bin/python (`make venv-gpu`: a CUDA torch, pytest-xdist and pytest-timeout), else python3,
# with src/ on the path. Exits non-zero when a test fails or no CUDA device is visible.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/gpu_check}
DEMO=${DEMO:-results/demo}
mkdir -p "$OUT"
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv-gpu/bin/python ]; then PYTHON=.venv-gpu/bin/python; else PYTHON=python3; fi
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
spanaug() { "$PYTHON" -m spanaug "$@"; }
DEVICE=$("$PYTHON" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' 2>/dev/null)
if [ -z "$DEVICE" ]; then
    build=$("$PYTHON" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo "no torch")
    echo "gpu_check: $PYTHON ($build) sees no CUDA device: run it on a GPU node, after make venv-gpu" >&2
    exit 2
fi
echo "gpu_check: $DEVICE, $("$PYTHON" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)')"
status=0

# 1. The model tests, on the GPU. Each test gets 60 s at most (pytest-timeout), the slowest are listed.
WORKERS=${WORKERS:-8}
MODEL_TESTS=(tests/test_paraphraser.py tests/test_paraphraser_batching.py tests/test_paraphraser_families.py
    tests/test_paraphraser_processors.py tests/test_paraphraser_static.py tests/test_aligner.py
    tests/test_aligner_interface.py tests/test_cross_aligner.py tests/test_training_loop.py tests/test_frameid.py
    tests/test_stages.py tests/test_fe_retention.py tests/test_devices.py tests/test_oom.py
    tests/test_paraphrase_overlap.py tests/test_phrase_bans.py tests/test_topk.py tests/test_host_gate.py)
existing=()
for t in "${MODEL_TESTS[@]}"; do [ -f "$t" ] && existing+=("$t"); done
start=$SECONDS
"$PYTHON" -m pytest -q -p no:cacheprovider -n "$WORKERS" --timeout 60 --durations 10 "${existing[@]}" \
    >"$OUT/tests.log" 2>&1 || status=1
tail -n 25 "$OUT/tests.log"
echo "gpu_check: model tests on $DEVICE: $(tail -n 1 "$OUT/tests.log") ($((SECONDS - start)) s)"

# 2. The decoding and alignment benchmark.
start=$SECONDS
"$PYTHON" scripts/bench_gpu.py --repeats "${REPEATS:-2}" >"$OUT/bench_gpu.log" 2>&1 || status=1
grep -v "Loading weights\|Writing model" "$OUT/bench_gpu.log" | tail -n 40
echo "gpu_check: bench_gpu.py on $DEVICE ($((SECONDS - start)) s)"

# 3. One demo shard on cuda (the default dtype, bf16, and float32) and on cpu (float32, the demo's).
requests="$DEMO/iterations/iter1/shard000.requests.parquet"
if [ -f "$requests" ] && [ -d "$DEMO/models/paraphraser" ] && [ -d "$DEMO/models/aligner" ]; then
    for run in cuda:auto cuda:float32 cpu:float32; do
        dev=${run%%:*} dtype=${run#*:} p="$OUT/shard0.${run/:/-}"
        spanaug paraphrase --requests "$requests" --out "$p.paraphrases.parquet" --stats "$p.paraphrase_stats.json" \
            --model "$DEMO/models/paraphraser" --beam-size 6 --batch-size 16 --dtype "$dtype" --device "$dev" \
            >"$p.paraphrase.log" 2>&1 || { status=1; tail -n 3 "$p.paraphrase.log"; }
        spanaug align paraphrases --model "$DEMO/models/aligner" --paraphrases "$p.paraphrases.parquet" \
            --out "$p.aligned.parquet" --stats "$p.align_stats.json" --mode align --dtype "$dtype" --device "$dev" \
            >"$p.align.log" 2>&1 || { status=1; tail -n 3 "$p.align.log"; }
        grep -h "device\|backend" "$p.paraphrase.log" "$p.align.log" | head -n 4
    done
    for a in cuda-auto cuda-float32; do
        "$PYTHON" scripts/compare_shards.py "$OUT/shard0.$a" "$OUT/shard0.cpu-float32" --device "$DEVICE" || status=1
    done
else
    echo "gpu_check: no demo shard under $DEMO (run make demo, or set DEMO): step 3 skipped"
fi
# 4. Where a decode batch's time goes.
start=$SECONDS
"$PYTHON" scripts/profile_decode.py >"$OUT/profile_decode.log" 2>&1 || status=1
grep -E "rows|wall" "$OUT/profile_decode.log"
echo "gpu_check: profile_decode.py on $DEVICE ($((SECONDS - start)) s; kernels in $OUT/profile_decode.log)"
# 5. The constraint processor alone.
"$PYTHON" scripts/bench_processor.py --device cuda --sentences 96 >"$OUT/bench_processor.log" 2>&1 || status=1
grep -E "rows|iteration" "$OUT/bench_processor.log"
# 6. Decoder-only paraphrasers: the engine's beam search at Gemma 3 270M's and Qwen2.5 1.5B's shapes.
start=$SECONDS
"$PYTHON" scripts/bench_causal.py --generate >"$OUT/bench_causal.log" 2>&1 || status=1
grep -E "^==|sentences/s|projection" "$OUT/bench_causal.log"
echo "gpu_check: bench_causal.py on $DEVICE ($((SECONDS - start)) s)"
exit $status
