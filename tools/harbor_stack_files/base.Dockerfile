# Stands in for python:3.11-slim, which cannot be pulled here: Debian bookworm's python3 (3.11)
# with venv and pip, on the root file system tools/harbor_stack.py makes with mmdebstrap.
FROM usdgrade/bookworm-rootfs:latest
# HTTPS from containers goes through a proxy that only this machine's CA bundle trusts.
COPY ca-certificates.crt /usr/local/share/ca-certificates/host-bundle.crt
ENV PIP_CERT=/usr/local/share/ca-certificates/host-bundle.crt \
    SSL_CERT_FILE=/usr/local/share/ca-certificates/host-bundle.crt \
    REQUESTS_CA_BUNDLE=/usr/local/share/ca-certificates/host-bundle.crt \
    LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# As in python:3.11-slim: pip installs into the interpreter, and `python`/`pip` name it.
RUN rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED \
 && ln -s /usr/bin/python3 /usr/local/bin/python \
 && ln -s /usr/bin/pip3 /usr/local/bin/pip
CMD ["python3"]
