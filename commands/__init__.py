"""The `usdgrade` command: one parser that registers every application's subcommands, plus the
commands that belong to no one application (`doctor`, `explain`). The top of the layers."""
