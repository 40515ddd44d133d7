"""What a one-node cluster leaves on the machine goes: processes in its namespace or naming its
folders, mounts below its folders, its namespace; a run killed before its teardown is swept by
the next one (the state file's owner is gone). Needs root, as the node does."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest

from realcluster.node import state
from realcluster.node.layout import NodeError
from realcluster.node.sweep import mounts_below, sweep
from realcluster.onenode import start_one_node


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TFGANG_KUBE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "nodes"


def _alive(process: subprocess.Popen[bytes]) -> bool:
    return process.poll() is None


def test_the_sweep_kills_the_namespace_processes_unmounts_and_deletes_it(tmp_path: Path) -> None:
    netns = f"tfgang-node-test-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    inside = subprocess.Popen(["nsenter", f"--net=/run/netns/{netns}", "--", "sleep", "300"])
    naming = subprocess.Popen(["sh", "-c", f"sleep 300; : {tmp_path}"])
    (tmp_path / "mnt").mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(tmp_path / "mnt")], check=True)
    try:
        assert mounts_below([tmp_path]) == [str(tmp_path / "mnt")]
        sweep(netns, f"/{netns}", [tmp_path])
        inside.wait(10)
        naming.wait(10)
        assert not _alive(inside) and not _alive(naming)
        assert mounts_below([tmp_path]) == []
        assert not Path(f"/run/netns/{netns}").exists()
    finally:
        for process in (inside, naming):
            if _alive(process):
                process.kill()
        subprocess.run(["umount", "--lazy", str(tmp_path / "mnt")], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "delete", netns], capture_output=True, check=False)


def test_a_node_whose_owner_died_is_swept_by_the_next_run(tmp_path: Path, cache: Path) -> None:
    node_id = f"tfgang-node-test-{secrets.token_hex(3)}"
    subprocess.run(["ip", "netns", "add", node_id], check=True)
    workdir, rundir = tmp_path / "work", tmp_path / "run"
    workdir.mkdir()
    rundir.mkdir()
    owner = subprocess.Popen(["sleep", "0"])
    owner.wait()
    state.record(node_id, workdir, rundir, temporary=True)
    record = cache / f"{node_id}.json"
    entry = json.loads(record.read_text())
    entry["pid"] = owner.pid  # the run that wrote it is gone
    record.write_text(json.dumps(entry))
    try:
        assert state.clean_stale_nodes() == [node_id]
        assert not record.exists() and not workdir.exists() and not rundir.exists()
        assert not Path(f"/run/netns/{node_id}").exists()
    finally:
        subprocess.run(["ip", "netns", "delete", node_id], capture_output=True, check=False)


def test_tunables_come_back_when_the_last_node_stops(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "proc-sys"
    for name, value in (("vm/overcommit_memory", "0"), ("kernel/panic", "1"), ("kernel/panic_on_oops", "0")):
        (fake / name).parent.mkdir(parents=True, exist_ok=True)
        (fake / name).write_text(value + "\n")
    monkeypatch.setattr(state, "_sysctl", lambda name: fake / name)
    state.record("tfgang-node-a", tmp_path, tmp_path, temporary=False)
    state.save_tunables()
    (fake / "kernel/panic").write_text("10\n")  # what the kubelet does
    state.save_tunables()  # a second node starting keeps the first baseline
    state.restore_tunables("tfgang-node-b")  # another node stops while this one lives: nothing yet
    assert (fake / "kernel/panic").read_text().strip() == "10"
    state.restore_tunables("tfgang-node-a")
    assert (fake / "kernel/panic").read_text().strip() == "1"
    assert not (cache / state.BASELINE).exists()


def test_a_components_folder_missing_a_binary_fails_the_start(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    missing = r"lacks kube-apiserver.*cni/bin/bridge"
    with pytest.raises(NodeError, match=missing), start_one_node(tmp_path, tmp_path):
        pass
