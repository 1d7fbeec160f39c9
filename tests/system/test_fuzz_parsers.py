"""Fuzzing the parsers we own (the PNG and JPEG checks, the WAV header, the CSV reader,
idx, the Example codec, the TFRecord scanner, the JSON nesting scan), for a bounded
time in every run: hypothesis draws bytes (random, and valid inputs with bytes flipped,
cut, inserted), and atheris, where it is installed, runs its coverage-guided fuzzer on
the same properties (fuzz_properties.py says what each must hold). A crash found
either way is reduced to a regular test below, `test_found_by_fuzzing`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_properties import PROPERTIES, seeds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = Path(__file__).parent
EXAMPLES = int(os.environ.get("TFR_FUZZ_EXAMPLES", "150"))  # per property, in the suite's time
ATHERIS_SECONDS = int(os.environ.get("TFR_FUZZ_SECONDS", "4"))  # per property


@st.composite
def mutated(draw, seed: bytes) -> bytes:
    """`seed` with a few bytes flipped, a run cut out or inserted, or cut short."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["flip", "cut", "insert", "truncate", "repeat"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if action == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif action == "cut":
            del data[at : at + draw(st.integers(1, 16))]
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif action == "truncate":
            del data[at:]
        elif action == "repeat":
            data[at:at] = data[at : at + draw(st.integers(1, 64))] * draw(st.integers(2, 50))
    return bytes(data)


SEEDS = seeds()


@pytest.mark.parametrize("kind", sorted(PROPERTIES))
def test_any_bytes_are_answered_or_refused_by_the_parsers_own_error(kind):
    prop = PROPERTIES[kind]

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.one_of(mutated(SEEDS[kind]), st.binary(max_size=256)))
    def check(data):
        prop(data)

    check()


@pytest.mark.parametrize("kind", sorted(PROPERTIES))
def test_the_seeds_are_answered(kind):
    """The valid inputs the fuzzing starts from pass their property as they are."""
    PROPERTIES[kind](SEEDS[kind])


@pytest.mark.parametrize("kind", sorted(PROPERTIES))
def test_coverage_guided_fuzzing_finds_no_crash(kind, tmp_path):
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "seed").write_bytes(SEEDS[kind])
    run = subprocess.run(
        [sys.executable, str(HERE / "fuzz_target.py"), kind, str(corpus), f"-max_total_time={ATHERIS_SECONDS}",
         "-rss_limit_mb=2048", f"-artifact_prefix={tmp_path}/", "-print_final_stats=0"],
        capture_output=True, text=True, timeout=ATHERIS_SECONDS + 120, cwd=tmp_path,
    )  # fmt: skip
    found = sorted(p.name for p in tmp_path.glob("crash-*"))
    assert run.returncode == 0 and not found, f"{found}\n{run.stderr[-3000:]}"


# Inputs fuzzing found that once broke a property: each kept as a regular test.
FOUND = [
    ("wav", b"RIFF\x1c\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00"),  # a fmt chunk cut inside (struct.error)
    ("json_nesting", b'"\\\\"[[\n'),  # an even run of backslashes before a quote ends the string
    # a chunk whose name is not printable before fmt: libsndfile stops walking there (no data chunk)
    (
        "wav",
        bytes.fromhex("524946467400000057415645030000000000000066")
        + b"mt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00\x80>\x00\x00\x02\x00\x10\x00data\x01\x00\x00\x00\x05\x00\x06",
    ),
    # a second RIFF header after the samples: libsndfile reads on past the data chunk and refuses it
    (
        "wav",
        b"RIFF\x2c\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00\x80>\x00\x00\x02\x00\x10\x00"
        b"data\x04\x00\x00\x00\x01\x00\x02\x00RIFF\x00\x00\x00\x00",
    ),
    # a second RIFF header between fmt and the samples: libsndfile refuses any RIFF chunk
    (
        "wav",
        b"RIFF\x44\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00@\x1f\x00\x00\x80>\x00\x00\x02\x00\x10\x00"
        b"RIFF\x04\x00\x00\x00WAVEdata\x04\x00\x00\x00\x01\x00\x02\x00",
    ),
]


@pytest.mark.parametrize("kind, data", FOUND, ids=[f"{k}-{i}" for i, (k, _) in enumerate(FOUND)])
def test_found_by_fuzzing(kind, data):
    PROPERTIES[kind](data)
