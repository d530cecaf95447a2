#!/bin/bash
# The oracle: restore the intact package (solution/reference) in place of the broken one.
set -euo pipefail
find /app -mindepth 1 -delete
cp -R /solution/reference/. /app/
