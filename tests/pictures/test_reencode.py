"""imaging.reencode (Pillow only, where it can) against the general path it shortens,
encode(decode(...).pixels): the same bytes and shape for every source and policy."""

from __future__ import annotations

import io
import itertools
import warnings

import numpy as np
import pytest
from PIL import Image

from tfr_convert.pictures.imaging import DecodePolicy, decode, encode, reencode


def _bytes(im: Image.Image, fmt: str, **kwargs) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kwargs)
    return buf.getvalue()


def _sources() -> dict[str, bytes]:
    rng = np.random.default_rng(1)
    rgb = Image.fromarray(rng.integers(0, 256, (37, 53, 3), dtype=np.uint8))
    exif = Image.Exif()
    exif[0x0112] = 6
    rgba = rgb.convert("RGBA")
    rgba.putalpha(Image.fromarray(rng.integers(0, 256, (37, 53), dtype=np.uint8)))
    frames = [rgb.convert("P"), rgb.rotate(90).convert("P")]
    gif = io.BytesIO()
    frames[0].save(gif, "GIF", save_all=True, append_images=frames[1:])
    return {
        "rgb jpeg": _bytes(rgb, "JPEG", quality=90),
        "gray png": _bytes(rgb.convert("L"), "PNG"),
        "rgba png": _bytes(rgba, "PNG"),
        "palette png": _bytes(rgb.convert("P"), "PNG"),
        "16-bit png": _bytes(Image.fromarray(rng.integers(0, 65535, (20, 30), dtype=np.uint16)), "PNG"),
        "exif jpeg": _bytes(rgb, "JPEG", exif=exif.tobytes()),
        "cmyk jpeg": _bytes(rgb.convert("CMYK"), "JPEG"),
        "animated gif": gif.getvalue(),
    }


POLICIES = {
    "as is": DecodePolicy(),
    "stretch": DecodePolicy(resize=(24, 16)),
    "crop": DecodePolicy(resize=(24, 16), fit="crop"),
    "pad": DecodePolicy(resize=(24, 16), fit="pad", background=(10, 20, 30)),
    "rgb": DecodePolicy(rgb=True, resize=(20, 20)),
    "gray luma": DecodePolicy(grayscale=True),
    "gray mean": DecodePolicy(grayscale=True, gray_method="mean", resize=(16, 16)),
}


@pytest.mark.parametrize(("policy", "fmt"), list(itertools.product(POLICIES, ["jpeg", "png"])))
def test_reencode_gives_the_general_paths_bytes_for_every_source(policy, fmt):
    for name, data in _sources().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the animated GIF's "took frame 0"
            pixels = decode(data, name, POLICIES[policy]).pixels
            got, shape = reencode(data, name, POLICIES[policy], fmt, 90)
        assert shape == pixels.shape, name
        assert got == encode(pixels, fmt, 90), name


def _sampling(data: bytes) -> str:
    from PIL import JpegImagePlugin

    return {2: "4:2:0", 0: "4:4:4"}[JpegImagePlugin.get_sampling(Image.open(io.BytesIO(data)))]


def test_jpegs_are_encoded_4_2_0_as_tensorflow_encodes_them_and_4_4_4_on_request(cli, tmp_path):
    """tf.io.encode_jpeg (TFDS's Image and Video features) subsamples chroma 4:2:0, and so
    does every JPEG written here by default, at any quality; --chroma 4:4:4 keeps full
    colour resolution, and the manifest says which."""
    import json

    import tensorflow as tf
    from helpers import make_clip

    pixels = np.random.default_rng(2).integers(0, 256, (24, 32, 3), dtype=np.uint8)
    assert _sampling(tf.io.encode_jpeg(pixels, quality=95).numpy()) == "4:2:0"
    for quality in (50, 95, 100):
        assert _sampling(encode(pixels, "jpeg", quality)) == "4:2:0"
        assert _sampling(encode(pixels, "jpeg", quality, "4:4:4")) == "4:4:4"
    (tmp_path / "pics").mkdir()
    Image.fromarray(pixels).save(tmp_path / "pics" / "a.png")
    make_clip(tmp_path / "clips" / "c.mkv", np.stack([pixels, pixels[::-1]]))
    for chroma in ("4:2:0", "4:4:4"):
        out = tmp_path / f"images-{chroma.replace(':', '')}"
        given = [] if chroma == "4:2:0" else ["--chroma", chroma]
        result = cli.convert("images", tmp_path / "pics", "--image-format", "jpeg", *given, "--out", out)
        assert result.exit_code == 0, result.output
        (record,) = [r.numpy() for r in tf.data.TFRecordDataset([str(p) for p in out.glob("*.tfrecord-*")])]
        stored = tf.train.Example.FromString(record).features.feature["image"].bytes_list.value[0]
        assert _sampling(stored) == chroma
        assert json.loads((out / "manifest.json").read_text())["options"]["decode"]["chroma"] == chroma
        clips = tmp_path / f"video-{chroma.replace(':', '')}"
        result = cli.convert("video", tmp_path / "clips", "--frame-format", "jpeg", *given, "--out", clips)
        assert result.exit_code == 0, result.output
        (record,) = [r.numpy() for r in tf.data.TFRecordDataset([str(p) for p in clips.glob("*.tfrecord-*")])]
        frames = tf.train.Example.FromString(record).features.feature["video"].bytes_list.value
        assert len(frames) == 2 and {_sampling(f) for f in frames} == {chroma}
