"""The observations the engines journal and keep: a converter's summary of them must let
`finish` say what it would have said of all of them (ImagesConverter.summarized)."""

from __future__ import annotations

from collections import Counter

from helpers import write_class_folders
from hypothesis import given, settings
from hypothesis import strategies as st

from tfr_convert.converters.images import ImagesConverter, ImagesOptions

observation = st.tuples(
    st.sampled_from(["jpeg", "png", "gif"]),
    st.integers(1, 3),
    st.integers(1, 3),
    st.sampled_from([1, 2, 3, 4]),
    st.none() | st.tuples(st.sampled_from(["EXIF orientation", "CMYK"]), st.sampled_from(["a.jpg", "b.jpg"])),
)


def _finished(root: str, image_format: str, observations: Counter) -> tuple[list[str], object]:
    converter = ImagesConverter(root, ImagesOptions(image_format=image_format))
    return converter.finish(observations), converter.features["image"]


@settings(max_examples=150, deadline=None)
@given(a=st.lists(observation, max_size=12), b=st.lists(observation, max_size=12))
def test_finish_says_of_summaries_what_it_says_of_every_observation(tmp_path_factory, a, b):
    root = tmp_path_factory.getbasetemp() / "summary-src"
    if not root.exists():
        write_class_folders(root, ["cat"], per_class=1)
    summarizer = ImagesConverter(str(root), ImagesOptions())
    whole = _finished(str(root), "keep", Counter(a) + Counter(b))
    assert _finished(str(root), "keep", summarizer.summarized(Counter(a)) + Counter(b)) == whole
    both = summarizer.summarized(summarizer.summarized(Counter(a)) + summarizer.summarized(Counter(b)))
    assert _finished(str(root), "keep", both) == whole


def test_a_shard_of_photos_of_every_size_journals_a_handful_of_observations(tmp_path):
    write_class_folders(tmp_path / "src", ["cat"], per_class=1)
    converter = ImagesConverter(str(tmp_path / "src"), ImagesOptions())
    photos = Counter(("jpeg", 200 + i % 97, 300 + i % 89, 3, None) for i in range(1500))
    photos[("jpeg", 240, 320, 3, ("EXIF orientation", "x.jpg"))] += 1
    summary = converter.summarized(photos)
    assert len(summary) <= 4
    assert ("jpeg", 240, 320, 3, ("EXIF orientation", "x.jpg")) in summary


def test_a_raw_run_keeps_every_shape_it_lists_in_its_error(tmp_path):
    write_class_folders(tmp_path / "src", ["cat"], per_class=1)
    converter = ImagesConverter(str(tmp_path / "src"), ImagesOptions(image_format="raw"))
    shapes = Counter(("png", h, 8, 3, None) for h in range(1, 10))
    assert converter.summarized(shapes) == shapes
