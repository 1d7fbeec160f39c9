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

Grouped and stratified splits (--group-column with --stratify), a CSV split column,
--dedupe exact and a detection dataset were pinned later, with what tfr-export writes of
them (every file's sha256; Parquet by its rows, since its bytes name the writing
library's version), all checked equal to the code before that change. Later still:
`records` unshuffled (its items are keyed by their source file's path, a temporary
folder here, which would move any shuffle or split) and `segmentation` (its masks are
PNGs Pillow encodes, so its shards are pinned by their records' content, each PNG as
its pixels); and every pinned conversion is run again with the other worker count (the
same bytes), as ArrayRecord (the same records) and through --engine beam (the same
bytes), and every command must have one. The VOC export was re-pinned once, its
annotation files' bytes unchanged, when they came to be named after the picture's stem
(b0.xml, not b0.png.xml) and labelmap.txt joined them.
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
    "records_copy": {
        "dataset_info.json": "7dd3339ca418b21bc13c63f377b76230660e5f7718b93223c13c0e0f4000d68c",
        "features.json": "14fd4e86aa85469d7a6749754c3d7ca5f5c1175d4c5bae3f109c6e40319b7725",
        "label.labels.txt": "7427877c40fb0361401248f9c96abe6117396bc6ab16811b5b1706274c02443e",
        "manifest.json": "cddab2639ab5888c9d1d5f342cc75f21b6fb331232f71cb824a2e37a3daf7531",
        "mnist-test.tfrecord-00000-of-00003": "d1b1c47e2ac3a5527b74521c13203862b8c3d692a993272aa78767600ad87f79",
        "mnist-test.tfrecord-00001-of-00003": "8eaf14d3cad0cce8e517f7cf1e096e46b4587d15ce7e49785dd54df8b9c51dba",
        "mnist-test.tfrecord-00002-of-00003": "5ef0b83231c38557c0c0341378416951cfb78b679210bcb41ccc30c222d3d52d",
        "mnist-train.tfrecord-00000-of-00003": "b6a443fb055f53606862c4d90834d4130c5eebbee222a53b2ee14653bed9355d",
        "mnist-train.tfrecord-00001-of-00003": "2b4b3a1a41a9dc88d4067b405fd75f3aa0930dd2e5e548c474df38861a3c5de1",
        "mnist-train.tfrecord-00002-of-00003": "c6bbe64b52dbfd72aab17bfbf6d88f0a4bcb095c8e96bd80f40b5094f601f8cb",
        "mnist-validation.tfrecord-00000-of-00003": "79ba2cc04dfcddd22c3b61e2d8c6a20ed6139930f629a3001530099e9035299e",
        "mnist-validation.tfrecord-00001-of-00003": "82ff9b8a63b5572e3a801a336556755171caeb69377daca5ae123c0f1df77663",
        "mnist-validation.tfrecord-00002-of-00003": "4ce2969b1bad1ee1174e0bec18540a89724bdd817794a95c0c0c7b4a2c204ed2",
    },
    "segmentation": {  # the shards by their records' content (BY_CONTENT)
        "dataset_info.json": "2adc79aa716e66ac6d177b871d055e5fe8504c6a0ccf44b406904257d432e64d",
        "features.json": "cd56e9071887bf55b8f6a29f45745e25276ede9bed18a10aae75cf5059d3fc80",
        "manifest.json": "eeb9653579f9d4168b2b768bb9c153c8f349b5fc79ade31d88cdcd8471484e35",
        "seg-test.tfrecord-00000-of-00001": "c53fff791811f6b197ebfc3b9963bff993fc8464029ad3298ef5bd9af516945b",
        "seg-train.tfrecord-00000-of-00001": "9704e9650115f742351637a033474972d2a1b16773731338b3a58fe28de30060",
    },
    "detection_csv": {
        "boxes-test.tfrecord-00000-of-00001": "211f5e98df295f6b3131b4e88d9c09418a74b32c3b8aaac2bb9569a699c1be3c",
        "boxes-train.tfrecord-00000-of-00001": "0fe6a31ff405ae28744401163d2806c7a19a486f993c47ea2310da4bd40bf7f7",
        "dataset_info.json": "f8c149fe315f0d8c9a5463792cccb27381d91cf1c6a1e1dc907a5f6ffcbfc74f",
        "features.json": "097df0a5a1544e81e3a8bf6035fa061946510bac844513bb4f7bd1b79ebf1875",
        "image-object-class-label.labels.txt": "091a6b9e7ebc147a914e73896b588d07287baabff85bf89b4d5eb8e06ba499d4",
        "label_map.pbtxt": "c4d5b8daab6761d838f10c6959212dbd62beed5a54b0815fc72d01ef65cd33a9",
        "manifest.json": "5b6684e91942f5788910ee39a5b86891490bc17d001209faf7dacb70451a11fb",
    },
    "images_dedupe": {
        "dataset_info.json": "88378ac36aa95000945ae0930e42b1d1d7dbe84c3c47f70493b95ef5024cf794",
        "features.json": "7b77262827d1a7d7705a752ccab3ba41ba8e4ae3d93a99ee957e7ff02f81b66a",
        "grouped-test.tfrecord-00000-of-00001": "d8c7a89067aef47bdb15af58d192ac8871f01816fb2a3920910b26ab1f851fa8",
        "grouped-train.tfrecord-00000-of-00001": "1e7b7194d39f105478a614ab7f9cdff2cabb25ba605821393ec08a51dfe62d1d",
        "label.labels.txt": "c4b9db6496963374efe936ae9dacd699f739e8406e37502ee76caa82cb727b2f",
        "manifest.json": "400cd02950ff966d158828ec5e8eac39f09dcfaa3040e2f4102aa7f35aedb9d1",
    },
    "images_grouped_stratified": {
        "dataset_info.json": "45300957eeb4a964a8a0ed32c14d1484d2796cef7a229e85cd67bc104d7e40b3",
        "features.json": "7b77262827d1a7d7705a752ccab3ba41ba8e4ae3d93a99ee957e7ff02f81b66a",
        "grouped-test.tfrecord-00000-of-00001": "b4a805045a8dccd1621d8cde9771de53754ea39f20f206427160827a52e480e2",
        "grouped-train.tfrecord-00000-of-00001": "f2ed3ac3ffd852edaad96ede415adb63223c80b46d3c9fb68cf57142365b3458",
        "label.labels.txt": "c4b9db6496963374efe936ae9dacd699f739e8406e37502ee76caa82cb727b2f",
        "manifest.json": "dd39286e47cd5a0a6291958012c8e2ac1134024823020c301b330a94a6957277",
    },
    "images_split_column": {
        "dataset_info.json": "664810b3a926bdc7678247cb09b0530f6e75e6c37cb45c7e366bfd5bf76a0f57",
        "features.json": "2de9a8db126676557654a7228a40f5391ba2462abd4c3c9c1eb803b9e069d422",
        "grouped-test.tfrecord-00000-of-00001": "3fa0e8da9c7245ecbc4d189a14db50bcfce649cb12482fe24ac709636885ce2a",
        "grouped-train.tfrecord-00000-of-00001": "3b943d5c2ece5c707354ed4f2a58f2a94d48fcf91ebcecd908daadb6eacff7c7",
        "label.labels.txt": "c4b9db6496963374efe936ae9dacd699f739e8406e37502ee76caa82cb727b2f",
        "manifest.json": "8a0bb668bdfab548be27cb6675d21b34953fa5ef00efd97f838f9c36d81c13f6",
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
    "table_csv": {
        "dataset_info.json": "a6e036682b903b4e6254f54fe28a2391496f6629262834eb860d634706d686ac",
        "features.json": "bc5db9b205e02be97474d1f695cf931edbf098376fed899e62178a4ac9e2bf34",
        "label.labels.txt": "53233f765ce712b4e5f247910e5e2a7fc447404f43d41c14bd911776a3af699b",
        "manifest.json": "b3fbe815dfd7552c3a3ac5e31492672ae92fd1ae917a83b4a4af00d7e562d549",
        "pets-test.tfrecord-00000-of-00001": "46cd969c0106e13789a46e1ad4a9a527f8c1418f3b704e401bd94efed512ea93",
        "pets-train.tfrecord-00000-of-00001": "b169e81cf337aa073cbd2f8e97a031aa5aaf3fcd23db70052d04e0fb025ac074",
    },
    "audio_mono": {
        "dataset_info.json": "d13ffeed86705f9894dcdb9c7c341a04b599e5a36626f9f4541ed7af1908f132",
        "features.json": "bf64c9d967cd0f73469f47f71107a820a0bb7a4723d8967a57905c6f25c9959b",
        "label.labels.txt": "30463273a862b461430d60c781573a11e07e433af8215905dc6e33182770167c",
        "manifest.json": "269362a7ef85dccf3604acbc64e52998eef6980d2bfdf9fd97558b4d7d3daf26",
        "sounds-test.tfrecord-00000-of-00001": "76cc0ad8510fc0c457a8f493fbff3d767776f9cf0cca7829618fd4adb953b98b",
        "sounds-train.tfrecord-00000-of-00001": "89c415e8f3138a990aa021db7b945cc10c76415081584d5b8778b9d1021baf85",
    },
    "video_fps": {
        "clips-test.tfrecord-00000-of-00001": "9391805ac7d5f20f8c0ea6b259a45f8af6b87ebc1cf265b0554b084314424310",
        "clips-train.tfrecord-00000-of-00001": "d8ca81d789ab7a75f7a3b4cb44e317a4373681eead0bb428a54b7d6bdc0f621f",
        "dataset_info.json": "ba870127f0fd3dd4333e410fbcaedfe43015d521fa16aea8698f9bf950779f32",
        "features.json": "213cb404ef9ae5555d015334d0296f75fcaf664c8236b61a2fe691387aa8f2bd",
        "label.labels.txt": "27e08351cab3453fd1f8945451ced27f75e4d3c02d22dfdca52222ae32d43c71",
        "manifest.json": "5a57852af20eea9b42d59394fc80feb486d13d9a993c55a8b265675a092c32e7",
    },
    "webdataset_tars": {
        "dataset_info.json": "ebe22b8573b3f753cefa860f72dee207c0a5f5169986703f25311f6d61e7b83a",
        "features.json": "91be8137c52a64712c8412a4af084d3f2ba1405ee40b8df6fabb4853a05dc25d",
        "label.labels.txt": "b78a1987bcbdc0903ba6ba29ee3e1f4e7cc1ca868a60889beb141e26e06cb005",
        "manifest.json": "b3d63dba17bef33bbe2424f5ceb27daa30161279f31848bf44ba89b3865ef709",
        "shards-test.tfrecord-00000-of-00001": "f049a8e24ad47642c4013e0c029f3e37b3e3c89a6473e191f869caf5add01327",
        "shards-train.tfrecord-00000-of-00001": "069170cc1a60b71af7277453ab7b024fa3b6186f88e2e47908c71e4e400bc297",
    },
}


GOLDEN_EXPORTS: dict[str, dict[str, str]] = {
    "webdataset": {
        "test-000000.tar": "7c257f275db201d2ab915519bb6e51ab12c7f97302030812f083bc111b3c5c0d",
        "test.shards.json": "6da57880e55b9d06dcf9e4dea909ecb2bed12cae2a5d6a712385482144825ca9",
        "train-000000.tar": "bb172996ae374ef942994ce3d45d623e8564a3bb7a52fec26145072e2fcf99ff",
        "train.shards.json": "0f38ac09cdd5b74aa87d441f1ba970a67c15b111920a80e8b2171a78950a3593",
    },
    "boxes_csv": {
        "annotations/boxes_test.csv": "f6016f09a3f42f6da4429114dcb74fd36813cbae8d075b3d270d80e155a18a33",
        "annotations/boxes_train.csv": "1d0d86c2e82f39e948a5d1c9625908a4fea4ddd1312c080c7962c3bea4e9ecb9",
        "images/b0.png": "6dd68fb77e2c34fca4303b336d79043e7763070864b46b9b0f35aab19a94a8ed",
        "images/b1.png": "22c1a9469e68b6550b0619c43c8b7759da210c1aade422ca34734b2fb94c70ac",
        "images/b2.png": "beb4ca10495bc6f38363b4876e8cdc3a1874803ccebde0f5040b3fc7b744946a",
        "images/b3.png": "c7aa1405b7c46dcbcb665745021d34071d6535d3db3c6d379bde805c6784fae6",
        "images/b4.png": "a2c1281b9b2c9c4c16cc5a359d305321db91c0883c33d7207f23757af96efbe8",
        "images/b5.png": "b86c2e9dab75f7fdc14c20d099a20aedd28975ebb054157881c86c89255ac232",
        "splits.csv": "49c45fba4b3c1852263fdac3547792908ab6c7fcbdcc8831b4b882bd04c7d8c3",
    },
    "coco": {  # two splits: one instances file each (re-pinned once when the export began to keep the splits)
        "annotations/instances_test.json": "eb97f44d4fe3dbeffb5a0acb9e17337297a0e6014bd556b2bf50ba51fd49ebfb",
        "annotations/instances_train.json": "a947ae5eac7468f645359d34aeff0cd1e5b7ffb3fa7daff3b98cebcc444e6c38",
        "images/b0.png": "6dd68fb77e2c34fca4303b336d79043e7763070864b46b9b0f35aab19a94a8ed",
        "images/b1.png": "22c1a9469e68b6550b0619c43c8b7759da210c1aade422ca34734b2fb94c70ac",
        "images/b2.png": "beb4ca10495bc6f38363b4876e8cdc3a1874803ccebde0f5040b3fc7b744946a",
        "images/b3.png": "c7aa1405b7c46dcbcb665745021d34071d6535d3db3c6d379bde805c6784fae6",
        "images/b4.png": "a2c1281b9b2c9c4c16cc5a359d305321db91c0883c33d7207f23757af96efbe8",
        "images/b5.png": "b86c2e9dab75f7fdc14c20d099a20aedd28975ebb054157881c86c89255ac232",
        "splits.csv": "49c45fba4b3c1852263fdac3547792908ab6c7fcbdcc8831b4b882bd04c7d8c3",
    },
    "images_csv": {
        "cat/cat0.png": "c2500f65bf15bcf0cb4353a948a89ac53ffa2fb1551f8188448e6a6cdcf9e233",
        "cat/cat1.png": "6488ea892deb7626b08e98221a3575557df645e17eea7280465477fecc69cafa",
        "cat/cat2.png": "03c4dfc58a1ca647d3415ba1773af91b150709507927cce291ee88d527e84e6f",
        "cat/cat3.png": "83ccdd2f49f6f85972ddbde6ae12d9d02bd29f825da828513b3f4a09b012236d",
        "cat/cat4.png": "6415c94e68914fa5b706b998c7fdd3ee22d5f9223df4beffcad288c513bb0f39",
        "dog/dog0.png": "4402db488da854e071c056e80b6b33ce5e00a5f6d01b0fc435ba2eace03eb823",
        "dog/dog1.png": "437de77760bc30bd5bd41eb6a295174e91e9c13c89b9857cf93c21517ff1172a",
        "dog/dog2.png": "36e550d1eb9ad2eacbfe5e664c8a82ef83b9261b4b72ad70aee228a5428b4501",
        "dog/dog3.png": "1fea7fa80d06932782df6d58c3e6fc82c999bf56be4c2d2fcb1f3338ead44612",
        "dog/dog4.png": "0838b36759b3f6e93da892dcce567c957a3ce996f51b4d0871f6e323ee680873",
        "emu/emu0.png": "d34bfb7cbd519c54b1b73ebcfe23e632e956c087ea69c2c7fd870fa5cd5bc20d",
        "emu/emu1.png": "88e8be42dc4d529ff28805d4643fabb627465433dcb5d083beb941ed06a4f03a",
        "emu/emu2.png": "4873892cf33ef6111a072fbd1e3b11ddb9a1fe5b476b4f88b3f6c1719616e975",
        "emu/emu3.png": "79b03d29baf0d35274bfef7421a05424ad428d5e04f1989127a041b4079a4439",
        "emu/emu4.png": "2f7a05605aef2f68eebcbeb01565abc61b14c30457cc03cd3e7b5f1b9082f2d9",
        "labels.csv": "6f9f96613eda17c10df120c409f21f557a4f435438c927b6a68db3e04673af82",
    },
    "images_folders": {
        "test/cat/cat0.png": "c2500f65bf15bcf0cb4353a948a89ac53ffa2fb1551f8188448e6a6cdcf9e233",
        "test/cat/cat2.png": "03c4dfc58a1ca647d3415ba1773af91b150709507927cce291ee88d527e84e6f",
        "test/dog/dog2.png": "36e550d1eb9ad2eacbfe5e664c8a82ef83b9261b4b72ad70aee228a5428b4501",
        "test/dog/dog4.png": "0838b36759b3f6e93da892dcce567c957a3ce996f51b4d0871f6e323ee680873",
        "test/emu/emu3.png": "79b03d29baf0d35274bfef7421a05424ad428d5e04f1989127a041b4079a4439",
        "test/emu/emu4.png": "2f7a05605aef2f68eebcbeb01565abc61b14c30457cc03cd3e7b5f1b9082f2d9",
        "train/cat/cat1.png": "6488ea892deb7626b08e98221a3575557df645e17eea7280465477fecc69cafa",
        "train/cat/cat3.png": "83ccdd2f49f6f85972ddbde6ae12d9d02bd29f825da828513b3f4a09b012236d",
        "train/cat/cat4.png": "6415c94e68914fa5b706b998c7fdd3ee22d5f9223df4beffcad288c513bb0f39",
        "train/dog/dog0.png": "4402db488da854e071c056e80b6b33ce5e00a5f6d01b0fc435ba2eace03eb823",
        "train/dog/dog1.png": "437de77760bc30bd5bd41eb6a295174e91e9c13c89b9857cf93c21517ff1172a",
        "train/dog/dog3.png": "1fea7fa80d06932782df6d58c3e6fc82c999bf56be4c2d2fcb1f3338ead44612",
        "train/emu/emu0.png": "d34bfb7cbd519c54b1b73ebcfe23e632e956c087ea69c2c7fd870fa5cd5bc20d",
        "train/emu/emu1.png": "88e8be42dc4d529ff28805d4643fabb627465433dcb5d083beb941ed06a4f03a",
        "train/emu/emu2.png": "4873892cf33ef6111a072fbd1e3b11ddb9a1fe5b476b4f88b3f6c1719616e975",
    },
    "parquet_rows": {
        "test.parquet rows": "f405642f50c873edf1951d651ad52d36caeadf36a7c09be68c4ae69db84afa88",
        "train.parquet rows": "3a7afccbd9c6b60da276716b73195b0f2ba7636ff79bfb8eac12e5c005925ade",
        "validation.parquet rows": "00afdae4653eed7014a3cdb9537e30f3b49c8723c25a3326c1e36082b53fc6f9",
    },
    "voc": {  # with the devkit's split lists (pinned once they were added)
        "ImageSets/Main/test.txt": "4fc3dc73285594e0adc19337263461d400612e8bce8a056cf0518931ea8d3add",
        "ImageSets/Main/train.txt": "153fe2e30f9cb1e689c086ff1f5a2fffdf93100fee8f09078548755ca631a7a3",
        "Annotations/b0.xml": "1c1f1fedbcecc3ded3f739d6b30fe8e0b845a160b094027331c8add7b14b1432",
        "Annotations/b1.xml": "4e474455c00cc698e997234f763bdd17d8a9303cb294bc696606a60e7ee59e3b",
        "Annotations/b2.xml": "62fbad0161f6a62cea0234388edcae959b7cad97db7113c67f2b9bc5d290c69e",
        "Annotations/b3.xml": "6eca00f7f34356c54f62e585897f0e1298211b7a4884c671ebc0fadbbf7156ce",
        "Annotations/b4.xml": "e83f78e50a5ed512381af5764f7ef0700f645653eb3c203f2ade54b233210a36",
        "Annotations/b5.xml": "07814de7e9031f8d10baed6b13fc9213d433fb5b1a14c67b787f10345b8a5bcb",
        "images/b0.png": "6dd68fb77e2c34fca4303b336d79043e7763070864b46b9b0f35aab19a94a8ed",
        "images/b1.png": "22c1a9469e68b6550b0619c43c8b7759da210c1aade422ca34734b2fb94c70ac",
        "images/b2.png": "beb4ca10495bc6f38363b4876e8cdc3a1874803ccebde0f5040b3fc7b744946a",
        "images/b3.png": "c7aa1405b7c46dcbcb665745021d34071d6535d3db3c6d379bde805c6784fae6",
        "images/b4.png": "a2c1281b9b2c9c4c16cc5a359d305321db91c0883c33d7207f23757af96efbe8",
        "images/b5.png": "b86c2e9dab75f7fdc14c20d099a20aedd28975ebb054157881c86c89255ac232",
        "labelmap.txt": "23f4d0532b6f04e73485555d7771277fef23d5c430e2fca49f4cc8c985165f50",
        "splits.csv": "49c45fba4b3c1852263fdac3547792908ab6c7fcbdcc8831b4b882bd04c7d8c3",
    },
    "yolo": {  # with data.yaml and a list file a split (pinned once they were added)
        "data.yaml": "6da3bc69431441ad1c343444efdad8ef76490e38b7c7b79ead1ba63e908c1fcf",
        "test.txt": "60939d26cb174b7effffde94023a576a88eed1ad977b94a05c2ef4bebd9ce613",
        "train.txt": "00028f5e9164a5e3590c51260719cee6fb02de40fe1a741363abc3da0a97c89c",
        "images/b0.png": "6dd68fb77e2c34fca4303b336d79043e7763070864b46b9b0f35aab19a94a8ed",
        "images/b1.png": "22c1a9469e68b6550b0619c43c8b7759da210c1aade422ca34734b2fb94c70ac",
        "images/b2.png": "beb4ca10495bc6f38363b4876e8cdc3a1874803ccebde0f5040b3fc7b744946a",
        "images/b3.png": "c7aa1405b7c46dcbcb665745021d34071d6535d3db3c6d379bde805c6784fae6",
        "images/b4.png": "a2c1281b9b2c9c4c16cc5a359d305321db91c0883c33d7207f23757af96efbe8",
        "images/b5.png": "b86c2e9dab75f7fdc14c20d099a20aedd28975ebb054157881c86c89255ac232",
        "labels/b0.txt": "eb34b590ecfd424c659d234cf6dc298f68708c478583c8514fc98ad65076f262",
        "labels/b1.txt": "af0384d0be7575e67c1c1f0d8b4e862be08f6848b64bd2a7391fff5d84b5b8b3",
        "labels/b2.txt": "b6e22db287fd868fafef13f3e4f6015b8752aabbb7e92ce96d1bf7c55c52a02f",
        "labels/b3.txt": "355f7fd4e1ca230f3d066eb142dfde63adcf919139ed75d1b2adadb90ad4d891",
        "labels/b4.txt": "3f4c33eed91cf1653bd83db28700b5c3c0cfd1f9c0596396639d50ec36e2057f",
        "labels/b5.txt": "6cc1d9fca117b78fb5e39a5af6110556af02857e9b782c467bb22bff7508c9bf",
        "labels/classes.txt": "98e8f8bbd7819c3ba0bd22a2956ddde42d122e0228f9a9588cd6972f23abdf95",
        "splits.csv": "49c45fba4b3c1852263fdac3547792908ab6c7fcbdcc8831b4b882bd04c7d8c3",
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


def write_grouped_csv(root: Path) -> tuple[Path, Path]:
    """24 pictures of 8 patients (3 each, one class per patient), with a fold column,
    and two byte-identical copies among them (for --dedupe)."""
    rng = np.random.default_rng(9)
    root.mkdir(parents=True)
    lines = ["file,label,patient,fold"]
    for i in range(24):
        patient = i // 3
        pixels = rng.integers(0, 256, (5, 4, 3), dtype=np.uint8)
        (root / f"q{i:02d}.png").write_bytes(png_bytes(pixels))
        lines.append(f"q{i:02d}.png,{['flu', 'cold'][patient % 2]},p{patient},{['train', 'test'][i % 4 == 0]}")
    (root / "q23.png").write_bytes((root / "q05.png").read_bytes())  # a copy: --dedupe keeps them together
    csv = root.parent / "grouped.csv"
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
    grouped_dir, grouped = write_grouped_csv(tmp / "grouped")
    boxes_dir, boxes = write_boxes(tmp / "boxes")
    seg_images, seg_masks = write_segmentation(tmp / "seg")
    table = write_table_csv(tmp / "table")
    audio = write_audio_folder(tmp / "sounds")
    clips = write_video_folder(tmp / "clips")
    shards = write_webdataset_shards(tmp / "shards")
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
        "images_grouped_stratified": ["images", grouped_dir, "--labels", grouped, "--label-column", "label",
                                      "--group-column", "patient", "--split", "train=0.75,test=0.25", "--stratify",
                                      "--workers", "2"],
        "images_split_column": ["images", grouped_dir, "--labels", grouped, "--label-column", "label",
                                "--split-column", "fold", "--workers", "1"],
        "images_dedupe": ["images", grouped_dir, "--labels", grouped, "--label-column", "label", "--dedupe", "exact",
                          "--split", "train=0.5,test=0.5", "--seed", "4"],
        "detection_csv": ["detection", boxes_dir, "--annotations", boxes, "--split", "train=0.5,test=0.5",
                          "--workers", "2"],
        "segmentation": ["segmentation", seg_images, "--masks", seg_masks, "--split", "train=0.5,test=0.5",
                         "--workers", "2"],
        # records: unshuffled, since a record's key (which seeds any shuffle or split) holds
        # its file's path, a temporary folder here; made from mnist_raw, converted above
        "records_copy": ["records", tmp / "out" / "mnist_raw", "--no-shuffle", "--num-shards", "3"],
        "table_csv": ["table", table, "--label-column", "kind", "--split", "train=0.75,test=0.25", "--stratify",
                      "--key-column", "id", "--nulls", "omit", "--rename", "kind=label", "--workers", "2"],
        "audio_mono": ["audio", audio, "--mono", "--split", "train=0.5,test=0.5", "--stratify", "--workers", "2"],
        "video_fps": ["video", clips, "--fps", "15", "--split", "train=0.5,test=0.5", "--stratify", "--workers", "2"],
        "webdataset_tars": ["webdataset", f"{shards}/shard-{{0..1}}.tar", "--split", "train=0.5,test=0.5",
                            "--workers", "2"],
    }  # fmt: skip


def write_webdataset_shards(root: Path) -> Path:
    """Two webdataset tar shards of 5 samples: a PNG, a class id, json fields (tarfile
    itself, members dated 0: the same bytes everywhere)."""
    import io
    import tarfile

    from PIL import Image

    rng = np.random.default_rng(21)
    root.mkdir(parents=True)
    for s in range(2):
        with tarfile.open(root / f"shard-{s}.tar", "w", format=tarfile.GNU_FORMAT) as tar:
            for i in range(5):
                picture = io.BytesIO()
                Image.fromarray(rng.integers(0, 256, (4 + i, 6, 3), dtype=np.uint8)).save(picture, "PNG")
                fields = json.dumps({"caption": f"shard {s} sample {i}", "meta": {"score": i / 4, "ok": i % 2 == 0}})
                for ext, data in (("png", picture.getvalue()), ("cls", str(i % 3).encode()), ("json", fields.encode())):
                    info = tarfile.TarInfo(f"s{s}/{i:03d}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    return root


def write_audio_folder(root: Path) -> Path:
    """8 stereo 16-bit WAV recordings of two classes, of several lengths (tones and noise)."""
    import soundfile

    rng = np.random.default_rng(12)
    for i in range(8):
        n = 300 + 37 * i
        wave = np.sin(np.arange(n)[:, None] * [0.05 + 0.01 * i, 0.11]) * 9000 + rng.normal(0, 500, (n, 2))
        (root / ["hum", "hiss"][i % 2]).mkdir(parents=True, exist_ok=True)
        soundfile.write(root / ["hum", "hiss"][i % 2] / f"r{i}.wav", wave.astype(np.int16), 8000, subtype="PCM_16")
    return root


def write_video_folder(root: Path) -> Path:
    """6 FFV1 clips (lossless: their frames decode alike wherever FFmpeg runs) of two
    classes, 3 to 5 frames of 12x16 at 10 a second."""
    import av

    rng = np.random.default_rng(21)
    for i in range(6):
        folder = root / ["run", "walk"][i % 2]
        folder.mkdir(parents=True, exist_ok=True)
        with av.open(str(folder / f"c{i}.mkv"), "w") as out:
            stream = out.add_stream("ffv1", rate=10)
            stream.width, stream.height, stream.pix_fmt = 16, 12, "bgr0"
            for pixels in rng.integers(0, 256, (3 + i % 3, 12, 16, 3), dtype=np.uint8):
                out.mux(stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")))
            out.mux(stream.encode())
    return root


def write_table_csv(root: Path) -> Path:
    """40 rows: an id, an integer, a float with some empty cells, a text, a class."""
    root.mkdir(parents=True)
    lines = ["id,count,score,note,kind"]
    for i in range(40):
        score = "" if i % 7 == 3 else f"{(i * 37 % 101) / 8:.3f}"
        lines.append(f"r{i:03d},{i * i - 50},{score},note {i % 5},{['cat', 'dog', 'emu'][i % 3]}")
    path = root / "pets.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_segmentation(root: Path) -> tuple[Path, Path]:
    """6 pictures and their masks of 3 classes (grayscale PNGs of the class indices)."""
    rng = np.random.default_rng(11)
    images, masks = root / "images", root / "masks"
    images.mkdir(parents=True)
    masks.mkdir()
    for i in range(6):
        height, width = 6 + i, 5 + i
        (images / f"s{i}.png").write_bytes(png_bytes(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)))
        (masks / f"s{i}.png").write_bytes(png_bytes(rng.integers(0, 3, (height, width), dtype=np.uint8)))
    return images, masks


def write_boxes(root: Path) -> tuple[Path, Path]:
    """6 PNG pictures with 1-2 boxes each, in the generate_tfrecord.py CSV layout."""
    rng = np.random.default_rng(10)
    root.mkdir(parents=True)
    lines = ["filename,width,height,class,xmin,ymin,xmax,ymax"]
    for i in range(6):
        (root / f"b{i}.png").write_bytes(png_bytes(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)))
        lines.append(f"b{i}.png,16,12,{['car', 'bus'][i % 2]},{i},1,{i + 8},{7 + i % 5}")
        if i % 3 == 0:
            lines.append(f"b{i}.png,16,12,bus,2,2,15,11")
    csv = root.parent / "boxes.csv"
    csv.write_text("\n".join(lines) + "\n")
    return root, csv


def digests(out: Path, by_content: bool = False) -> dict[str, str]:
    """sha256 of every file but manifest.json, and of the manifest's shard entries.

    `by_content`: for outputs whose records hold PNGs that Pillow encoded (zlib's bytes
    are its version's): each shard by its records, read back, with every PNG as its
    decoded pixels; the manifest's entries without the shards' sha256."""
    found = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}
    manifest = json.loads((out / "manifest.json").read_bytes())
    if by_content:
        for p in sorted(out.glob("*.tfrecord-*")):
            found[p.name] = _content_sha256(p)
        for split in manifest["splits"].values():
            for shard in split["shards"]:
                shard.pop("sha256")
    found["manifest.json"] = hashlib.sha256(json.dumps(manifest["splits"], sort_keys=True).encode()).hexdigest()
    return found


def _content_sha256(shard: Path) -> str:
    import io

    from PIL import Image

    from tfr_convert.containers.scan import read_records
    from tfr_convert.dataset.wire.example import parse

    def pinned(value):
        if isinstance(value, bytes) and value.startswith(b"\x89PNG"):
            pixels = np.asarray(Image.open(io.BytesIO(value)))
            return f"png {pixels.shape} {hashlib.sha256(pixels.tobytes()).hexdigest()}"
        return value.hex() if isinstance(value, bytes) else value

    records = [
        {name: [kind, [pinned(v) for v in values]] for name, (kind, values) in sorted(parse(r.data).items())}
        for r in read_records(str(shard))
    ]
    return hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()


# conversions whose records hold PNGs Pillow encoded: pinned by what the records hold
BY_CONTENT = {"segmentation"}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict[str, str]]:
    from click.testing import CliRunner

    tmp = tmp_path_factory.mktemp("golden")
    runner = CliRunner()
    results = {}
    made = conversions(tmp)
    for name, args in made.items():
        out = tmp / "out" / name
        result = runner.invoke(convert, [*map(str, args), "--out", str(out), "--quiet"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        results[name] = digests(out, name in BY_CONTENT)
    results["_dir"] = tmp / "out"  # type: ignore[assignment]
    results["_args"] = made  # type: ignore[assignment]
    return results


def test_every_command_has_a_golden_conversion(outputs):
    from tfr_convert.cli import commands

    assert set(commands.modules()) <= {args[0] for args in outputs["_args"].values()}


def _with_workers(args: list, workers: int) -> list:
    """The same conversion with `workers` workers."""
    args = [str(a) for a in args]
    if "--workers" in args:
        at = args.index("--workers")
        args = [*args[:at], *args[at + 2 :]]
    return [*args, "--workers", str(workers)]


def _records_by_split(out: Path) -> dict[str, list[bytes]]:
    from tfr_convert import containers

    found: dict[str, list[bytes]] = {}
    for shard in sorted(p for p in out.iterdir() if "-of-" in p.name):
        split = shard.name.split(".")[0].rsplit("-", 1)[1]
        found.setdefault(split, []).extend(r.data for r in containers.of_file(str(shard)).records(str(shard)))
    return found


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_any_worker_count_and_array_record_give_the_golden_output(outputs, name, tmp_path):
    """Every golden conversion again with 1, 2, 3 and 8 workers: the same bytes; and as
    ArrayRecord: the same records in the same order (ArrayRecord's own bytes are its
    library version's, so they are not pinned)."""
    from click.testing import CliRunner

    runner = CliRunner()
    args = outputs["_args"][name]
    for workers in (1, 2, 3, 8):
        out = tmp_path / f"workers-{workers}"
        result = runner.invoke(
            convert, [*_with_workers(args, workers), "--out", str(out), "--quiet"], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        assert digests(out, name in BY_CONTENT) == GOLDEN[name], workers
    if "--compression" in args:
        return  # ArrayRecord takes no --compression of TFRecord's
    out = tmp_path / "array_record"
    result = runner.invoke(
        convert, [*map(str, args), "--format", "array_record", "--out", str(out), "--quiet"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    records = _records_by_split(out)
    assert records and records == _records_by_split(outputs["_dir"] / name)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_the_beam_engine_gives_the_golden_output(outputs, name, tmp_path, monkeypatch):
    """Every golden conversion through --engine beam (the DirectRunner): the same bytes
    as the local engine's, metadata included."""
    pytest.importorskip("apache_beam")
    from click.testing import CliRunner

    from tfr_convert.engine import beam

    ran = []
    beam_run = beam.run
    monkeypatch.setattr(beam, "run", lambda *a, **k: ran.append(1) or beam_run(*a, **k))

    args = [str(a) for a in outputs["_args"][name]]
    if "--workers" in args:  # Beam's runner decides its own parallelism
        at = args.index("--workers")
        args = args[:at] + args[at + 2 :]
    out = tmp_path / "beam"
    result = CliRunner().invoke(
        convert, [*args, "--engine", "beam", "--out", str(out), "--quiet"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert ran  # the pipeline was Beam's
    assert digests(out, name in BY_CONTENT) == GOLDEN[name]


# tfr-export of golden conversions: every file it writes (relative path -> sha256);
# parquet's bytes name the writing library's version, so its rows are pinned instead
EXPORTS = {
    "images_folders": ("images_keep", ["--to", "images", "--layout", "folders"]),
    "images_csv": ("images_keep", ["--to", "images", "--layout", "csv"]),
    "coco": ("detection_csv", ["--to", "coco"]),
    "yolo": ("detection_csv", ["--to", "yolo"]),
    "voc": ("detection_csv", ["--to", "voc"]),
    "boxes_csv": ("detection_csv", ["--to", "csv"]),
    "parquet_rows": ("images_csv_raw", ["--to", "parquet"]),
    "webdataset": ("images_keep", ["--to", "webdataset"]),
}


def export_digests(out: Path) -> dict[str, str]:
    found = {}
    for p in sorted(out.rglob("*")):
        if p.suffix == ".parquet":
            import pyarrow.parquet as pq

            rows = pq.read_table(p).to_pylist()
            text = json.dumps(rows, sort_keys=True, default=lambda b: hashlib.sha256(b).hexdigest())
            found[f"{p.relative_to(out)} rows"] = hashlib.sha256(text.encode()).hexdigest()
        elif p.is_file():
            found[str(p.relative_to(out))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return found


@pytest.fixture(scope="module")
def exports(outputs, tmp_path_factory) -> dict[str, dict[str, str]]:
    from click.testing import CliRunner

    from tfr_convert.cli.export import export

    runner = CliRunner()
    tmp = tmp_path_factory.mktemp("golden-exports")
    results = {}
    for name, (source, args) in EXPORTS.items():
        out = tmp / name
        result = runner.invoke(export, [str(outputs["_dir"] / source), *args, "--out", str(out), "--quiet"],
                               catch_exceptions=False)  # fmt: skip
        assert result.exit_code == 0, result.output
        results[name] = export_digests(out)
    return results


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_export_files_equal_the_golden_sha256s(exports, name):
    assert exports[name] == GOLDEN_EXPORTS[name], json.dumps(exports[name], indent=1)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_conversion_bytes_equal_the_golden_sha256s(outputs, name):
    assert outputs[name] == GOLDEN[name], json.dumps(outputs[name], indent=1)


def test_every_golden_conversion_is_pinned(outputs):
    found = {name: value for name, value in outputs.items() if not name.startswith("_")}
    assert sorted(found) == sorted(GOLDEN), json.dumps(found, indent=1, sort_keys=True)
