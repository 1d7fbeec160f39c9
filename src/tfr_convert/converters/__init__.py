"""One module per input format, each a Converter (base.py) with its options class;
the rest here are their helpers. Which converter a `tfr-convert` subcommand runs is
said by its module in cli/commands/ (CONVERTERS), which imports it on first use."""
