"""The hostile cases of the newest sources that the matrix (test_hostile_matrix.py) does
not reach by its generated files: memory bounds measured for real, messages word for
word, `tfr_convert.write()`'s errors, a salvage that recovers nothing, and a clip whose
frames outgrow what a record holds."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tfr_convert
from tfr_convert.containers.crc import masked_crc
from valid_files import framed, mp4, wav

HERE = Path(__file__).resolve().parent
PEAK_RSS = HERE.parent / "peak_rss.py"


def measured(*args) -> tuple[subprocess.CompletedProcess, float]:
    """tfr-convert in a child process: (its result, its peak RSS in MiB)."""
    proc = subprocess.run([sys.executable, str(PEAK_RSS), "convert", *map(str, args)], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("peak_rss_mib=") and "Traceback" not in proc.stderr, proc.stderr
    return proc, float(last.split("=")[1])


def two_hour_wav(path: Path) -> None:
    """A plain WAV of 2 h of 44.1 kHz stereo (1.27 GB, its samples sparse: no disk used)."""
    samples = 2 * 3600 * 44100 * 4
    head = wav(0, 44100, 2)
    head = head[:4] + struct.pack("<I", 36 + samples) + head[8:40] + struct.pack("<I", samples)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + samples)


def test_a_two_hour_recording_is_refused_while_listing_with_the_clip_that_fits(tmp_path):
    two_hour_wav(tmp_path / "root" / "a" / "long.wav")
    proc, peak = measured("audio", tmp_path / "root", "--out", tmp_path / "out")
    assert proc.returncode == 1
    assert (
        f"{tmp_path}/root/a/long.wav: 7200 s of sound makes a record of about 4845 MiB, over the 64 MiB" in proc.stderr
    )
    assert "give --clip-seconds 95 or less" in proc.stderr
    assert peak < 150 and not (tmp_path / "out").exists()


def test_clip_seconds_reads_only_the_seconds_it_keeps(tmp_path):
    two_hour_wav(tmp_path / "root" / "a" / "long.wav")
    # one worker: the recording is read in the process whose peak is measured
    proc, peak = measured(
        "audio", tmp_path / "root", "--out", tmp_path / "out", "--clip-seconds", "10", "--quiet", "--workers", "1"
    )
    assert proc.returncode == 0, proc.stderr
    assert peak < 150  # 10 s of 1.27 GB (the whole file read was 1.3 GB and more)


def test_libsndfiles_words_name_the_file_once_without_a_python_repr(cli, tmp_path):
    (tmp_path / "root" / "a").mkdir(parents=True)
    (tmp_path / "root" / "a" / "ok.wav").write_bytes(wav())
    (tmp_path / "root" / "a" / "x.wav").write_bytes(b"\x00\x01" * 100)  # headerless samples, named as a WAV
    result = cli.convert("audio", tmp_path / "root", "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"error: {tmp_path}/root/a/x.wav: not a recording libsndfile reads (Format not recognised)"
    )
    assert result.stderr.count("x.wav") == 1 and "<_io" not in result.stderr


def test_a_clip_whose_frames_pass_what_a_record_holds_stops_at_that_frame(cli, tmp_path, monkeypatch):
    from tfr_convert.converters.media import video

    (tmp_path / "root" / "a").mkdir(parents=True)
    (tmp_path / "root" / "a" / "clip.mp4").write_bytes(mp4(frames=6))
    monkeypatch.setattr(video, "MAX_EXAMPLE_BYTES", 300)  # a few flat PNG frames of 32x32, not six
    result = cli.convert("video", tmp_path / "root", "--out", tmp_path / "out", "--workers", "1")
    assert result.exit_code == 1
    assert f"{tmp_path}/root/a/clip.mp4: frame " in result.stderr
    assert "the clip's frames pass 0 MiB, what a record may hold: give --max-frames, --fps or --resize" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_salvage_that_recovers_nothing_is_an_error_not_an_empty_dataset(cli, tmp_path):
    record = b"\x0a\x00" * 50
    head = struct.pack("<Q", len(record))
    damaged = head + struct.pack("<I", masked_crc(head)) + record + struct.pack("<I", masked_crc(record) ^ 1)
    (tmp_path / "bad.tfrecord").write_bytes(damaged)
    result = cli.convert("records", tmp_path / "bad.tfrecord", "--out", tmp_path / "out", "--on-error", "skip")
    assert result.exit_code == 1
    assert result.stderr == (
        "error: no examples to write: all 1 were left out under --on-error skip (the first: "
        f"{tmp_path}/bad.tfrecord: bytes 0-116: payload fails its CRC; 1 record(s) lost)\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_record_too_large_names_the_options_of_the_command_that_read_it(cli, tmp_path):
    data = b"x" * (65 << 20)
    (tmp_path / "big.tfrecord").write_bytes(framed([data]))
    converted = cli.convert("records", tmp_path / "big.tfrecord", "--out", tmp_path / "out")
    assert converted.exit_code == 1
    assert converted.stderr.endswith("above the 67108864 read whole (--max-record-size raises it)\n")
    assert "--verify" not in converted.stderr and "--count" not in converted.stderr
    inspected = cli.inspect(tmp_path / "big.tfrecord", "--head", "1")
    assert inspected.exit_code == 1
    assert inspected.stderr.endswith("(--max-record-size raises it) (--verify and --count check records of any size)\n")


def test_a_file_name_with_a_line_break_is_one_error_line(cli, tmp_path):
    root = tmp_path / "root"
    (root / "cat").mkdir(parents=True)
    (root / "cat" / "a\nerror: forged.png").write_bytes(b"not a picture")
    result = cli.convert("images", root, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and result.stderr.count("error:") == 2  # the name's, escaped
    assert "a\\nerror: forged.png" in result.stderr


# ------------------------------------------------------------------ tfr_convert.write()


def test_the_error_family_is_exported_at_the_top():
    from tfr_convert.errors import SourceError, TfrConvertError

    assert tfr_convert.TfrConvertError is TfrConvertError and issubclass(SourceError, tfr_convert.TfrConvertError)


@pytest.mark.parametrize(
    "data, message",
    [
        (lambda pd: pd.DataFrame({"x": [1, 2, "a", 4]}), "the DataFrame: column 'x' row 2: 'a' is a str, where row 0 holds a number"),
        (lambda pd: pd.DataFrame({"x": [1, 2**70]}), "the DataFrame: column 'x' row 1: an integer of 71 bits does not fit in 64 bits"),
        (lambda pd: [{"a": 1}, {"a": {"b": 2**70}}], "the rows: column 'a' row 1: an integer of 71 bits does not fit in 64 bits"),
        (lambda pd: [{"a": 1}, {"a": "s"}], "the rows: column 'a' row 1: 's' is a str, where row 0 holds a number"),
        (lambda pd: [], "write() was given no rows (an empty sequence): there is nothing to convert"),
    ],
    ids=["mixed-column", "int-2^70", "nested-2^70", "mixed-dicts", "empty"],
)  # fmt: skip
def test_write_raises_the_family_naming_column_and_row(tmp_path, data, message):
    pd = pytest.importorskip("pandas")
    with pytest.raises(tfr_convert.TfrConvertError) as caught:
        tfr_convert.write(data(pd), tmp_path / "out", quiet=True)
    assert str(caught.value).startswith(message)
    assert not (tmp_path / "out").exists()


def test_write_names_a_uint64_past_int64_by_row(tmp_path):
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"x": pa.array([1, 2**64 - 1], pa.uint64())})
    with pytest.raises(tfr_convert.TfrConvertError, match=r"row 1: column 'x' holds 18446744073709551615, past int64"):
        tfr_convert.write(table, tmp_path / "out", quiet=True)
    done = tfr_convert.write(table, tmp_path / "out", quiet=True, on_error="skip")
    assert done["splits"]["train"]["examples"] == 1 and np.isclose(len(done["skipped"]), 1)
