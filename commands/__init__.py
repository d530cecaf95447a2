"""The `usdgrade` command: one parser that registers every application's subcommands, plus the
commands that belong to no one application (`doctor`, `explain`). The top of the layers."""

from usd_repair_verifier import only_namespaced

only_namespaced(__name__)   # one name for each module: usd_repair_verifier.commands...
