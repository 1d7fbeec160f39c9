"""`tfr-convert video`: a folder of clips, labelled by a CSV or by class sub-folders."""

from __future__ import annotations

import click

from .. import options as opt
from ..running import run_conversion, source_context
from ..types import LocalOrRemotePath

CONVERTERS = ("tfr_convert.converters.media.video:VideoConverter",)


@click.command()
@click.argument("root", type=LocalOrRemotePath(exists=True, file_okay=False))
@opt.labelled_folder_options("clips", "a person, a scene")
@click.option(
    "--frame-format",
    type=click.Choice(["png", "jpeg"]),
    default="png",
    show_default=True,
    help="How each frame is stored: png (lossless) or jpeg (--quality).",
)
@opt.QUALITY
@opt.CHROMA
@click.option(
    "--fps",
    type=click.FloatRange(min=0, min_open=True),
    help="Resample every clip to F frames a second by timestamps [default: the clip's own frames].",
)
@click.option("--max-frames", type=click.IntRange(min=1), help="Keep a clip's first N frames.")
@opt.resize_option("Make every frame WxH (see --fit).")
@opt.fit_option("black")
@click.option(
    "--as",
    "record_kind",
    type=click.Choice(["example", "sequence-example"]),
    default="example",
    show_default=True,
    help="example: TFDS's Video feature; sequence-example: one tf.train.SequenceExample per clip, the frames "
    "and their times in feature lists (image/encoded, image/timestamp), the rest in the context (MediaPipe's keys).",
)
@opt.on_error_option("skip: leave out clips that cannot be read, and list them.")
@opt.common_options
def command(
    root,
    frame_format,
    quality,
    chroma,
    fps,
    max_frames,
    resize,
    fit,
    record_kind,
    on_error,
    **common,
) -> None:
    """A folder of clips (MP4, MKV, AVI, WebM...), labelled by a CSV (--labels) or by class sub-folders."""
    from ...converters.media.video import VideoConverter, VideoOptions

    if fit != "stretch" and not resize:
        raise click.UsageError("--fit needs --resize WxH")
    options = opt.options_of(VideoOptions, as_sequence=record_kind == "sequence-example", **opt.labelling_of(common))
    opt.usage_error_if(options.problem())

    def make_converter():
        return VideoConverter(root, options, source_context(common, on_error))

    run_conversion(make_converter, on_error=on_error, **common)
