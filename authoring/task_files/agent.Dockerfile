# The agent's image: the broken package in /app and usd-core to inspect it; nothing of the
# verifier, the case or the reference. The agent works as the unprivileged user `agent`.
FROM @BASE_IMAGE@

RUN pip install --no-cache-dir usd-core==@USD_CORE@ numpy==@NUMPY@ \
 && useradd --create-home --shell /bin/bash agent

COPY --chown=agent:agent app /app
WORKDIR /app
