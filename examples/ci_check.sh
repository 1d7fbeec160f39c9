#!/usr/bin/env bash
# A CI step to copy: (optionally) convert, then verify every record and every shard
# against the metadata; the job fails on any problem and the log says which.
#
#   examples/ci_check.sh OUT_DIR [CONVERTER SRC [tfr-convert options...]]
#   e.g. examples/ci_check.sh out/mnist mnist examples/mnist-sample --num-shards 4
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 OUT_DIR [CONVERTER SRC [tfr-convert options...]]" >&2
  exit 2
fi
out=$1
shift
. "$(dirname "$0")/find_tools.sh"  # sets $tfr_convert, $tfr_inspect, $python

if [ $# -gt 0 ]; then
  "$tfr_convert" "$@" --out "$out" --overwrite --quiet --json > /dev/null
fi

status=0
report=$("$tfr_inspect" "$out" --verify --json) || status=$?
if [ -z "$report" ]; then
  exit "$status"  # tfr-inspect could not report (its one-line error, above, says why)
fi
echo "$report" | "$python" -c '
import json, sys
report = json.load(sys.stdin)
for f in report["files"]:
    for p in f["problems"]:
        print("::error::%s: record %d at byte %d: %s: %s" % (f["path"], p["record"], p["offset"], p["kind"], p["message"]))
for d in report["datasets"]:
    for p in d["problems"]:
        print("::error::%s/%s: %s: %s" % (d["path"], p["file"], p["kind"], p["message"]))
verdict = "ok" if report["ok"] else "FAILED"
print("%s: %d records in %d files, %d problems" % (verdict, report["records"], len(report["files"]), report["problems"]))
'
exit "$status"
