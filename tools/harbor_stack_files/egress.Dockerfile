# Stands in for Harbor's egress-control sidecar (harbor/environments/docker/
# harbor-docker-egress-control-sidecar), whose gost base image cannot be pulled here. Harbor's
# own entrypoint.sh, network-policy and gost.yaml are copied unchanged (tools/harbor_stack.py
# copies that folder as the build context); nftables does the enforcing as in Harbor's image;
# egress_proxy.py plays gost's transparent proxy with the allowlist bypass; nft-compat.sh lets
# bookworm's nft read Harbor's rules.
FROM @BASE_IMAGE@
RUN apt-get update -q && apt-get install -y -q --no-install-recommends nftables \
 && rm -rf /var/lib/apt/lists/* \
 && mv /usr/sbin/nft /usr/sbin/nft.debian
COPY nft-compat.sh /usr/sbin/nft
COPY gost.yaml allowlist.txt /opt/egress-sidecar/
COPY entrypoint.sh /opt/egress-sidecar/entrypoint.sh
COPY bin/network-policy /usr/local/bin/network-policy
COPY egress_proxy.py /bin/gost
RUN chmod 755 /opt/egress-sidecar/entrypoint.sh /usr/local/bin/network-policy /bin/gost /usr/sbin/nft
