"""Golden bytes: small fixed conversions must keep giving exactly these files.

The sha256s were taken before the encoder / container refactor; any change to the
serializer, the columnar fast paths, the framing, shard cutting or the TFDS
metadata shows up here. Inputs are built so their own bytes do not depend on
library versions (hand-written PNGs with stored deflate blocks, Python-2 pickles
written by tests/py2pickle.py), and no conversion re-encodes through Pillow.
manifest.json is compared by its shard entries only: it also records the tool's
version and options, which may grow. dataset_info.json and features.json were
re-pinned once since, with the shards unchanged, when raw images came to be
described as TFDS uint8 tensors and supervisedKeys were added, and for
compressed outputs when the description came to say TFDS cannot read them.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from helpers import write_cifar, write_mnist

from tfr_convert.cli.convert import convert

GOLDEN = {
    "cifar100_raw": {
        "cifar100-test.tfrecord-00000-of-00001": "7233ebaae4a0b5e00fb5f31b2266cb01103e70e2a291457573772b550722a442",
        "cifar100-train.tfrecord-00000-of-00001": "7d29fd6a81f8a8e19f580e99989c9d8665516ed1f7fb4ee1128c7636d2b7fba7",
        "cifar100-validation.tfrecord-00000-of-00001": "28b0e0888c1fac2b244f5a3ac03ea1ea4268ee9f68584c536724d28c5d8d9293",
        "coarse_label_index.labels.txt": "0258e236daa0e9bc1614b6f4a38dae9f98cf6352f520fa4093bc46a463a71f61",
        "dataset_info.json": "ba7495596f284416ccb8f495297289f9d58a4f7551d3c37e7b631cd2d0956d98",
        "features.json": "913e09d9bfc10bc3a3ea64143437b4d1ffe029510a6f0dd3a6812dedfb7374e3",
        "label_index.labels.txt": "61636f6fa1b421d5dc1771dcf434849c2f5976e303c26257cb4467fd78cadc3c",
        "manifest.json": "9211abaf7505aee6b40c7632c1342b85b2c39cf36c8adf0fe472ec3c1ce68f32",
    },
    "cifar10_raw": {
        "cifar10-test.tfrecord-00000-of-00002": "7632391b8979ff36b97064b911130c8f912630dbbd58183dfbb96840880e94f0",
        "cifar10-test.tfrecord-00001-of-00002": "420ee8d38d394a30346d5eb19f41f06be45ef4146299e9b4c2663792bd8d08f0",
        "cifar10-train.tfrecord-00000-of-00002": "98defa4d0da0df9ebbb9fd735a1f559ab278043d99f1fcffd4b4a09976b70eaa",
        "cifar10-train.tfrecord-00001-of-00002": "be41df6b6bb6c3db11f35207f277b2996b26731202d646ba55be2965e0be7aef",
        "dataset_info.json": "720e6282476596b3a69a1e9ad3b503a8abc93d0f688c42071e75e29443663c99",
        "features.json": "cc20f710f8be68fd698a1df2699db1416af37e03b66cd2e5d355958cb939217c",
        "label_index.labels.txt": "96bb2834e661ecff2831632399cb563b4681110a86187dab7c347924026e9109",
        "manifest.json": "993fc7383e3b95001f3f381d547176daa6166d1bddcf1f27641a849edea2b28f",
    },
    "images_csv_raw": {
        "csvimgs-test.tfrecord-00000-of-00001": "af59eb94b788abe4f86502ef86cd0c95cd6964f0101c46eaf39daa590cd19501",
        "csvimgs-train.tfrecord-00000-of-00001": "70a4c0a2a6882c187246b1fbab18a166299ec0816ff770d9e53a93448a43e30a",
        "csvimgs-validation.tfrecord-00000-of-00001": "5b584a70a79abe5798ce19400e0c87d188d598b770b40534025a1b24ecdcf7c7",
        "dataset_info.json": "bbefe9e656db24e7c0acc7dae826380038259d44143b990a3647e45b79fd8e83",
        "features.json": "737af2f894731509a89a3fd20bfe22779e4f3372bfd0e288e37639d254c861c1",
        "manifest.json": "aa9f58b449d58a2fb9cc8a4935be978dd04d0f4e47751740ecec4928426417d7",
        "species.labels.txt": "fa8eb5f047b29e3780ff0d73db209764ff27a0060b05426cb10991858a91d19a",
    },
    "images_keep": {
        "dataset_info.json": "465910a33304bb5b86394922539738d9319007a6609cecddd3eceb9ab27f94f0",
        "features.json": "70f7385b70bf2d9e40923f03448b8a33af353f3b415748a1d7e1627cd1a685fc",
        "folder-test.tfrecord-00000-of-00002": "27d560c906d95ef656c51194786a86a28272481b83658d917e69224450225311",
        "folder-test.tfrecord-00001-of-00002": "83775fe10ed58c48d7d14c4d0452dfdd0b73045984f3cb7cbfe4b1a379893bc7",
        "folder-train.tfrecord-00000-of-00002": "d3ae8556669c65a6f62ce552ee7cc6b0be431e8105deb1dfe3a7e2ec4763f128",
        "folder-train.tfrecord-00001-of-00002": "b135236de7163dfb926fae2e6d84163e84006287d9469d2428ec2a94070cc078",
        "label.labels.txt": "53233f765ce712b4e5f247910e5e2a7fc447404f43d41c14bd911776a3af699b",
        "manifest.json": "7ce48b7e9dc6c60a0d1fe69d0ff165f705e67dded096967da7155f86456df5ac",
    },
    "mnist_gzip": {
        "dataset_info.json": "ee901ef7efe90f2574f11ca5584b5dc78256f6d1e59fc2ed211a9dbf084827a4",
        "features.json": "14fd4e86aa85469d7a6749754c3d7ca5f5c1175d4c5bae3f109c6e40319b7725",
        "label.labels.txt": "7427877c40fb0361401248f9c96abe6117396bc6ab16811b5b1706274c02443e",
        "manifest.json": "a5d8f76e7c24f03467f648ed1538f3dc0ded44b6e54cf7a65c0d03ec1806a40e",
        "mnist-test.tfrecord-00000-of-00002": "face269e6bdb258a0a086b5d214c446c17d0a2413eab0a3b8422b7550b7a0401",
        "mnist-test.tfrecord-00001-of-00002": "788d000091648fed51a60ea91388434c44c9926f64612f4bd7c74602ce88a472",
        "mnist-train.tfrecord-00000-of-00002": "61e201901242123e619c1e836df839bea94576b308f7346594ceca28c2b0e0ca",
        "mnist-train.tfrecord-00001-of-00002": "143e4e137089b1ddc12307e9f7f440cc5f266b45c97c39ad172f2825b2442db6",
    },
    "mnist_raw": {
        "dataset_info.json": "dc13d2815d6c8e917f4f711f1d2873d615fd45924532f3632e27b28dc23839be",
        "features.json": "14fd4e86aa85469d7a6749754c3d7ca5f5c1175d4c5bae3f109c6e40319b7725",
        "label.labels.txt": "7427877c40fb0361401248f9c96abe6117396bc6ab16811b5b1706274c02443e",
        "manifest.json": "ad68412ad8eb4cdae7023034e5b217d789b9f731f71dde8e4ce72b51d8f67697",
        "mnist-test.tfrecord-00000-of-00002": "287af605cbe8402785ff4976ef6192976ce022600f185e1b741181112659a51b",
        "mnist-test.tfrecord-00001-of-00002": "f0f2d5bd0bad67184883b8452a3a0cef324a9a3433c2549a9ae8b06f98797af2",
        "mnist-train.tfrecord-00000-of-00004": "be3d4985d61d92089d37c05900eaf4b41f332405b6422331fbe65f3f81c3acd6",
        "mnist-train.tfrecord-00001-of-00004": "b8e3fabcc58152d1ab085e33771a76327896cb22a9e82b7a3ef584c17bd2f766",
        "mnist-train.tfrecord-00002-of-00004": "8899861b55a65c7a1b71ceb4d0bf08f24f8d1e7ab5661ffb713af4423ee66077",
        "mnist-train.tfrecord-00003-of-00004": "e689ca9a9361ba70a7511784d46741bb2141efbf3694baf814b8ad21da228dc5",
        "mnist-validation.tfrecord-00000-of-00001": "d9ab86e0fc3a0afbe5464e6f7f355fbc4cedf535448796c5470e0295f6b6d398",
    },
    "mnist_unshuffled": {
        "dataset_info.json": "177695163d711981fdeeb5db77cbeb40dcee22992f37c972788c38687b67ea0d",
        "features.json": "14fd4e86aa85469d7a6749754c3d7ca5f5c1175d4c5bae3f109c6e40319b7725",
        "label.labels.txt": "7427877c40fb0361401248f9c96abe6117396bc6ab16811b5b1706274c02443e",
        "manifest.json": "eb54d255597ba7c191f7a2b5c70a01893104b564296e2983f17de246218919de",
        "mnist-test.tfrecord-00000-of-00002": "138eebac7cddbfe19d3e98c7747c9d93ee518b1a943b337e262de344e2b048d3",
        "mnist-test.tfrecord-00001-of-00002": "eae1c3231f6e326d7a2850eea5a50264dd8ddffa637152510e3f1398dc891aab",
        "mnist-train.tfrecord-00000-of-00006": "bfa9de03dd7ddc12f1a872d53821aa55979c1f697d2a6f6d538ad9751dbd3775",
        "mnist-train.tfrecord-00001-of-00006": "fc19b1745a00e4dbcd8ffa7bb540f7292506449e7fa9aa498741b46b2fcde9da",
        "mnist-train.tfrecord-00002-of-00006": "ac0347ac402036608a7e2059a9f03cdd64a62b1bb4b5eb659ed300d47a1f2bee",
        "mnist-train.tfrecord-00003-of-00006": "83ad150a3b966659dc6b68d907f504796faf0840e976f98284d42feb6bd1e4e9",
        "mnist-train.tfrecord-00004-of-00006": "93c1399086a0f59a63f75d3074c8964d602facaf859a59e957b33077641bc02c",
        "mnist-train.tfrecord-00005-of-00006": "1cdc56f2a6c45698dd0d5108871838afd50133e4d677e6e0f2ace39c786f61bc",
    },
}


def png_bytes(pixels: np.ndarray) -> bytes:
    """A PNG whose bytes depend only on the pixels (no zlib level, no library version)."""
    height, width = pixels.shape[:2]
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    color = {1: 0, 3: 2}[channels]
    rows = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))
    raw = zlib.compress(rows, 0)  # stored blocks: the same bytes from any zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def write_image_folder(root: Path) -> Path:
    rng = np.random.default_rng(7)
    for c, name in enumerate(("cat", "dog", "emu")):
        (root / name).mkdir(parents=True)
        for i in range(5):
            shape = (6 + i, 5 + c) if (i + c) % 2 else (6, 5, 3)
            (root / name / f"{name}{i}.png").write_bytes(png_bytes(rng.integers(0, 256, shape, dtype=np.uint8)))
    return root


def write_image_csv(root: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(8)
    root.mkdir(parents=True)
    lines = ["file,species,weight,note"]
    for i in range(12):
        (root / f"p{i:02d}.png").write_bytes(png_bytes(rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)))
        lines.append(f"p{i:02d}.png,{['ant', 'bee', 'wasp'][i % 3]},{i * 1.5},n{i}")
    csv = root.parent / "labels.csv"
    csv.write_text("\n".join(lines) + "\n")
    return root, csv


def conversions(tmp: Path) -> dict[str, list[str]]:
    """name -> tfr-convert arguments (without --out)."""
    mnist = tmp / "mnist-src"
    write_mnist(mnist)
    cifar10 = write_cifar(tmp / "c10", "cifar10", per_batch=6)["path"]
    cifar100 = write_cifar(tmp / "c100", "cifar100", per_batch=9, archive=True)["path"]
    folder = write_image_folder(tmp / "folder")
    csv_dir, csv = write_image_csv(tmp / "csvimgs")
    return {
        "mnist_raw": ["mnist", mnist, "--validation-size", "5", "--examples-per-shard", "10"],
        "mnist_gzip": ["mnist", mnist, "--num-shards", "2", "--compression", "gzip", "--seed", "3"],
        "mnist_unshuffled": ["mnist", mnist, "--no-shuffle", "--shard-size", "5000"],
        "cifar10_raw": ["cifar", cifar10, "--num-shards", "2"],
        "cifar100_raw": ["cifar", cifar100, "--validation-size", "4", "--compression", "zlib"],
        "images_keep": ["images", folder, "--split", "train=0.6,test=0.4", "--stratify", "--num-shards", "2",
                        "--workers", "2"],
        "images_csv_raw": ["images", csv_dir, "--labels", csv, "--label-column", "species", "--image-format", "raw",
                           "--split", "train=0.5,validation=0.25,test=0.25", "--workers", "1"],
    }  # fmt: skip


def digests(out: Path) -> dict[str, str]:
    """sha256 of every file but manifest.json, and of the manifest's shard entries."""
    found = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}
    manifest = json.loads((out / "manifest.json").read_bytes())
    found["manifest.json"] = hashlib.sha256(json.dumps(manifest["splits"], sort_keys=True).encode()).hexdigest()
    return found


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict[str, str]]:
    from click.testing import CliRunner

    tmp = tmp_path_factory.mktemp("golden")
    runner = CliRunner()
    results = {}
    for name, args in conversions(tmp).items():
        out = tmp / "out" / name
        result = runner.invoke(convert, [*map(str, args), "--out", str(out), "--quiet"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        results[name] = digests(out)
    return results


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_conversion_bytes_equal_the_golden_sha256s(outputs, name):
    assert outputs[name] == GOLDEN[name], json.dumps(outputs[name], indent=1)


def test_every_golden_conversion_is_pinned(outputs):
    assert sorted(outputs) == sorted(GOLDEN), json.dumps(outputs, indent=1, sort_keys=True)
