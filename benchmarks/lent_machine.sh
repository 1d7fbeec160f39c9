#!/bin/bash
# The many-core runs of bench_scale.py, on a machine with no network (a lent one):
# the wheels it lacks travel in .whl/ (crc32c, webdataset, braceexpand, and tfr-convert
# itself, built here with `pip wheel --no-deps -w .whl .`). Results go to $OUT (or
# benchmarks/results/) as scale-N-cores*.md with their plots, and the parent's stage
# times at N workers as stage-times-N-cores.jsonl: 7 files, one under the 8 a lent
# machine's call brings back (keep a log of the output there). Each step has its own
# time limit, and bench_scale.py writes its file after every round, so a step stopped
# early leaves what it measured.
set -u
OUT=${OUT:-benchmarks/results}
cores=$(nproc)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade .whl/*.whl || exit 1
# Byte-compiled as a user's pip install leaves them: with PYTHONDONTWRITEBYTECODE=1 set on
# these machines, a package that lacks its .pyc files is compiled again at every start
# (numpy's 0.2 s of imports there were mostly that).
for package in tfr_convert numpy; do
  python3 -m compileall -q -j 0 "$(python3 -c "import $package, os; print(os.path.dirname($package.__file__))")" > /dev/null
done
export TF_CPP_MIN_LOG_LEVEL=3 PYTHONUNBUFFERED=1
df -h /tmp /dev/shm
disk=/var/tmp/scale
shm=/dev/shm/scale
# the large photo set, made once on disk and copied to memory
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; \
from bench_photos import make_photos; make_photos(Path('$disk/photos-48000'), 48000, None)"
mkdir -p $shm && cp -r $disk/photos-48000 $disk/photos-48000.complete $shm/
rm -rf $shm/tt  # the parent's stages at every core, timed inside the command
python3 benchmarks/stage_times.py images $shm/photos-48000 --out $shm/tt --workers $cores --quiet 2>&1 \
    | tail -1 >> "$OUT/stage-times-$cores-cores.jsonl"
rm -rf $shm/tt
timeout "${KEEP_LIMIT:-110}" python3 benchmarks/bench_scale.py --work $shm --photos 48000 --jobs keep --workers 1,4,$cores \
    --repeat 3 --no-single-peer --out "$OUT/scale-$cores-cores-keep-tmpfs.md" | tail -12
timeout "${KEEP_LIMIT:-110}" python3 benchmarks/bench_scale.py --work $disk --photos 48000 --jobs keep --workers 1,4,$cores \
    --repeat 3 --no-single-peer --out "$OUT/scale-$cores-cores-keep-disk.md" | tail -12
rm -rf $shm
# the other jobs on the default 12,000 photos (keep is measured above): OTHER_JOBS, under
# OTHER_LIMIT seconds, into scale-N-cores.md, or scale-N-cores-NAME.md with OTHER_NAME;
# OTHER_JOBS=none: none of them
jobs=${OTHER_JOBS:-"re-encode,reshard,shard writer,table"}
[ "$jobs" = none ] && exit 0
timeout "${OTHER_LIMIT:-200}" python3 benchmarks/bench_scale.py --work $disk --jobs "$jobs" \
    --workers 1,4,$cores --repeat 3 --out "$OUT/scale-$cores-cores${OTHER_NAME:+-$OTHER_NAME}.md" | tail -12
