# The agent's image: the broken package in /app, usd-core to inspect it, tmux (Harbor's terminus
# agents drive a tmux session; without it they build one at set-up) and curl; nothing of the
# verifier, the case or the reference. The agent works as the unprivileged user `agent`. Closed
# book, the agent's network is limited by the task's policy, not by missing tools.
FROM @BASE_IMAGE@

RUN apt-get update -q && apt-get install -y -q --no-install-recommends tmux curl \
 && rm -rf /var/lib/apt/lists/* \
 && pip install --no-cache-dir usd-core==@USD_CORE@ numpy==@NUMPY@ \
 && useradd --create-home --shell /bin/bash agent

COPY --chown=agent:agent app /app
WORKDIR /app
