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
# Bytecode for every module a grade imports, compiled here once into the tree test.sh reads
# bytecode from (and never writes to): one grade of the case's reference against itself, which
# must run to its end. Without it every grade compiled the verifier, its libraries and the
# standard library from source again (about 1.5 s of a 1.3 s grade).
RUN cd /tmp && /opt/usdgrade/venv/bin/python -I -X pycache_prefix=/opt/usdgrade/pycache -c '@BOOTSTRAP@' \
        /opt/usdgrade/verifier --case=/tests/case --submission=/tests/case/reference --out=/tmp/usdgrade-warm-up \
        > /dev/null && rm -rf /tmp/usdgrade-warm-up
RUN chmod -R a-w /opt/usdgrade /tests && chmod 755 /tests/test.sh
