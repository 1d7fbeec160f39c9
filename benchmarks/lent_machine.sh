#!/bin/bash
# The many-core runs of bench_scale.py, on a machine with no network (a lent one):
# the wheels it lacks travel in .whl/ (crc32c, webdataset, braceexpand, and tfr-convert
# itself, built here with `pip wheel --no-deps -w .whl .`). Results go to $OUT (or
# benchmarks/results/) as scale-N-cores*.md; each step has its own time limit, and
# bench_scale.py writes its file after every round, so a step stopped early leaves
# what it measured. It leaves 8 files in $OUT (3 results, 3 plots, 2 files of JSON lines),
# the most a lent machine's call brings back: keep a log of its output elsewhere.
set -u
OUT=${OUT:-benchmarks/results}
cores=$(nproc)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade .whl/*.whl || exit 1
export TF_CPP_MIN_LOG_LEVEL=3 PYTHONUNBUFFERED=1
df -h /tmp /dev/shm
disk=/var/tmp/scale
shm=/dev/shm/scale
# the large photo set, made once on disk and copied to memory
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; \
from bench_photos import make_photos; make_photos(Path('$disk/photos-48000'), 48000, None)"
mkdir -p $shm && cp -r $disk/photos-48000 $disk/photos-48000.complete $shm/
convert=$(python3 -c "import sysconfig; print(sysconfig.get_path('scripts'))")/tfr-convert
for w in 1 4 $cores; do  # where the CPU goes: the parent's main thread, its threads, its workers
    rm -rf $shm/tt
    python3 benchmarks/thread_times.py "$convert" images $shm/photos-48000 --out $shm/tt --workers $w --quiet \
        | tee -a "$OUT/thread-times-$cores-cores.jsonl"
done
rm -rf $shm/tt
for w in 1 $cores; do  # the parent's stages, timed inside the command
    rm -rf $shm/tt
    python3 benchmarks/stage_times.py images $shm/photos-48000 --out $shm/tt --workers $w --quiet 2>&1 \
        | tail -1 >> "$OUT/stage-times-$cores-cores.jsonl"
done
rm -rf $shm/tt
timeout 130 python3 benchmarks/bench_scale.py --work $shm --photos 48000 --jobs keep --workers 1,4,$cores \
    --repeat 3 --out "$OUT/scale-$cores-cores-keep-tmpfs.md" | tail -12
timeout 130 python3 benchmarks/bench_scale.py --work $disk --photos 48000 --jobs keep --workers 1,4,$cores \
    --repeat 3 --out "$OUT/scale-$cores-cores-keep-disk.md" | tail -12
rm -rf $shm
# the other jobs on the default 12,000 photos, every worker count (keep is measured above)
timeout 200 python3 benchmarks/bench_scale.py --work $disk --jobs "re-encode,reshard,shard writer,table" --repeat 3 \
    --out "$OUT/scale-$cores-cores.md" | tail -12
