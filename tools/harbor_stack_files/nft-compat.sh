#!/bin/sh
# Debian bookworm's nft (1.0.6) does not take the symbolic priority `dstnat` in the nat output
# chain that Harbor's network-policy script writes (newer nft does); `dstnat` is -100 by
# definition, so the same rule set is handed over with the number.
if [ "${1:-}" = "--file" ] && [ "${2:-}" = "-" ]; then
    sed 's/priority dstnat;/priority -100;/' | exec /usr/sbin/nft.debian "$@"
fi
exec /usr/sbin/nft.debian "$@"
