# The verifier's image (Harbor's separate verifier environment; build context: tests/).
# The verifier's dependencies at exact versions in their own venv, the verifier's source, the
# case (reference and input) and test.sh. Only the submission (/app) crosses over from the agent.
FROM @BASE_IMAGE@

COPY requirements.txt /opt/usdgrade/requirements.txt
RUN python -m venv /opt/usdgrade/venv \
 && /opt/usdgrade/venv/bin/python -m pip install --no-cache-dir --no-deps -r /opt/usdgrade/requirements.txt

COPY verifier /opt/usdgrade/verifier
COPY case /tests/case
COPY test.sh reward_details.py /tests/
RUN chmod -R a-w /opt/usdgrade /tests && chmod 755 /tests/test.sh
