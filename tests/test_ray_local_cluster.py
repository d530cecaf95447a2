"""bench/ray_cluster.py's start-up rule, with a stand-in for `ray start` (no Ray needed): a node
whose start fails is started once more; a second failure stops the cluster with the node's log."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest

from bench import ray_cluster

FAILS = "echo 'Exception: The current node timed out during startup.'; exit 1"
BLOCKS = "echo 'This command will now block forever'; exec sleep 600"


def _fake_ray(folder: Path, failures: int) -> Path:
    """A `ray` that fails its first `failures` starts, then starts and blocks."""
    script = folder / "ray"
    script.write_text(f"""#!/bin/sh
count=$(cat "{folder}/starts" 2>/dev/null || echo 0)
echo $((count + 1)) > "{folder}/starts"
if [ "$count" -lt {failures} ]; then {FAILS}; fi
{BLOCKS}
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _cluster(tmp_path: Path, monkeypatch, failures: int) -> ray_cluster.LocalCluster:
    monkeypatch.setattr(ray_cluster, "RAY", str(_fake_ray(tmp_path, failures)))
    cluster = ray_cluster.LocalCluster(tmp_path / "cluster", namespaces=False)
    cluster.address = "127.0.0.1:1"   # never dialled by the stand-in
    return cluster


def test_a_node_that_fails_to_start_is_started_once_more(tmp_path, monkeypatch, capsys):
    with _cluster(tmp_path, monkeypatch, failures=1) as cluster:
        node = cluster.add_node("n0")
        assert node.alive() and node.restarted
        assert (tmp_path / "starts").read_text().strip() == "2"
        assert "timed out during startup" in (cluster.root / "node-n0.failed.log").read_text()
    assert "Ray node n0 did not start; starting it once more" in capsys.readouterr().err
    assert not node.alive()   # the cluster's stop ended it


def test_a_node_that_fails_twice_stops_the_cluster_with_its_log(tmp_path, monkeypatch):
    cluster = _cluster(tmp_path, monkeypatch, failures=2)
    with pytest.raises(RuntimeError, match=r"(?s)Ray node n0 did not start:.*timed out during startup"):
        cluster.add_node("n0")
    assert (tmp_path / "starts").read_text().strip() == "2"
    assert not cluster.nodes and not cluster.temp_dir.exists()
