"""`tfr-convert audio`: a folder of recordings, labelled by a CSV or by class sub-folders."""

from __future__ import annotations

import click

from .. import options as opt
from ..running import run_conversion, source_context
from ..types import LocalOrRemotePath

CONVERTERS = ("tfr_convert.converters.media.audio:AudioConverter",)


@click.command()
@click.argument("root", type=LocalOrRemotePath(exists=True, file_okay=False))
@opt.labelled_folder_options("recordings", "a speaker, a session")
@click.option(
    "--audio-format",
    type=click.Choice(["raw", "bytes", "keep", "wav", "flac"]),
    default="raw",
    show_default=True,
    help="raw: the samples (int16 for 16-bit PCM) as an int64 list; bytes: as one bytes value (TFDS's "
    "encoding BYTES: smaller, faster); keep: each file's bytes; wav, flac: re-encoded, 16-bit PCM.",
)
@click.option(
    "--sample-rate",
    type=click.IntRange(min=1),
    help="Resample every recording to R (Fourier, band-limited) [default: the files' own, which must agree].",
)
@click.option("--mono", is_flag=True, help="Average the channels into one.")
@click.option("--clip-seconds", type=click.FloatRange(min=0, min_open=True), help="Keep the first S seconds.")
@click.option("--pad", "shorter", flag_value="pad", help="With --clip-seconds: silence after a shorter recording.")
@click.option("--drop", "shorter", flag_value="drop", help="With --clip-seconds: leave shorter recordings out.")
@opt.on_error_option("skip: leave out recordings that cannot be read, and list them.")
@opt.common_options
def command(
    root,
    audio_format,
    sample_rate,
    mono,
    clip_seconds,
    shorter,
    on_error,
    **common,
) -> None:
    """A folder of recordings (WAV, FLAC, OGG...), labelled by a CSV (--labels) or by class sub-folders."""
    from ...converters.media.audio import AudioConverter, AudioOptions

    options = opt.options_of(AudioOptions, **opt.labelling_of(common))
    opt.usage_error_if(options.problem())

    def make_converter():
        return AudioConverter(root, options, source_context(common, on_error))

    run_conversion(make_converter, on_error=on_error, **common)
