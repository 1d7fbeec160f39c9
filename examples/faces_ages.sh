#!/usr/bin/env bash
# The face/age tutorial, end to end: a folder of face images and a headerless age.csv
# (one age per image, in sorted file order) -> grayscale 48x48 TFRecords -> inspected -> loaded.
#
#   examples/faces_ages.sh IMAGE_DIR AGE_CSV OUT_DIR
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: $0 IMAGE_DIR AGE_CSV OUT_DIR" >&2
  exit 2
fi
images=$1 ages=$2 out=$3
. "$(dirname "$0")/find_tools.sh"  # sets $tfr_convert, $tfr_inspect, $python

"$tfr_convert" images "$images" --labels "$ages" --headerless-labels \
  --grayscale --gray-method mean --resize 48x48 --image-format raw \
  --split train=0.8,test=0.2 --out "$out" --overwrite --quiet
"$tfr_inspect" "$out" --verify
"$tfr_inspect" "$out" --stats | grep -A1 '^age'
"$python" - "$out" <<'PY'
import sys

import tfr_convert

for split in ("train", "test"):
    dataset = tfr_convert.load(sys.argv[1], split, as_supervised=True, label="age", batch_size=1000)
    images, ages = next(iter(dataset))
    print(f"{split}: images {tuple(images.shape)} {images.dtype.name}, mean age {float(ages.numpy().mean()):.1f}")
PY
