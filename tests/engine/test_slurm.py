"""The SLURM executor on a real one-node cluster: munged, slurmctld and slurmd from Debian's packages,
started by the fixture in a temporary folder (their own ports, sockets, spool and state), and torn down after.

Every worker of `validate --executor slurm` is then a job step (`srun`), running the interpreter backend;
its records come back into the project's artifacts folder. Without the daemons installed the tests are
skipped, unless TILEIROPT_REQUIRE_SLURM=1 (CI sets it): then they fail, so a broken install is loud.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app

from shared import EXAMPLES

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sinfo")
GUARD_S = 60.0  # hang guard for the cluster to come up


def _missing() -> list[str]:
    return [name for name in DAEMONS if not shutil.which(name) and not Path("/usr/sbin", name).exists()]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    missing = _missing()
    if missing or os.geteuid() != 0:
        why = f"SLURM not installed ({', '.join(missing)})" if missing else "the daemons need root"
        if os.environ.get("TILEIROPT_REQUIRE_SLURM") == "1":
            pytest.fail(f"{why}; `make slurm-packages` installs them")
        pytest.skip(why)
    root = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool", "munge", "log"):
        (root / sub).mkdir()
    (root / "munge").chmod(0o700)
    key, sock = root / "munge" / "munge.key", root / "munge" / "sock"
    subprocess.run([_binary("mungekey"), "-c", "-f", "-k", str(key)], check=True, capture_output=True)
    key.chmod(0o600)
    subprocess.run([_binary("munged"), "--force", "-S", str(sock), f"--key-file={key}",
                    f"--log-file={root / 'log' / 'munged.log'}", f"--pid-file={root / 'munge' / 'pid'}",
                    f"--seed-file={root / 'munge' / 'seed'}"], check=True, capture_output=True)
    host = socket.gethostname()
    conf = root / "slurm.conf"
    (root / "plugstack.conf").write_text("")
    conf.write_text("\n".join([
        "ClusterName=tileiropt-test", f"SlurmctldHost={host}", "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", f"AuthInfo=socket={sock}", "CredType=cred/munge",
        f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
        f"StateSaveLocation={root / 'state'}", f"SlurmdSpoolDir={root / 'spool'}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}", f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU", "MpiDefault=none", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "SwitchType=switch/none", "ReturnToService=2",
        f"PlugStackConfig={root / 'plugstack.conf'}",
        f"NodeName={host} CPUs={os.cpu_count() or 1} State=UNKNOWN",
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4", ""]))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    subprocess.run([_binary("slurmctld"), "-f", str(conf)], check=True, env=env)
    subprocess.run([_binary("slurmd"), "-f", str(conf)], check=True, env=env)
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:
        state = subprocess.run([_binary("sinfo"), "-h", "-o", "%T"], capture_output=True, text=True, env=env)
        if state.stdout.strip() == "idle":
            break
        time.sleep(0.5)
    else:
        logs = "\n".join((root / "log" / name).read_text()[-2000:] for name in ("slurmctld.log", "slurmd.log")
                         if (root / "log" / name).exists())
        _stop(root)
        pytest.fail(f"the one-node cluster did not come up:\n{logs}")
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    yield root
    if previous is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = previous
    _stop(root)


def _stop(root: Path) -> None:
    for pid_file in (root / "slurmd.pid", root / "slurmctld.pid", root / "munge" / "pid"):
        try:
            os.kill(int(pid_file.read_text().split()[0]), 15)
        except (OSError, ValueError):
            pass


def _examples(folder: Path) -> None:
    for source in [*EXAMPLES.glob("*.py"), EXAMPLES / "tileiropt.toml"]:
        if not source.name.endswith("_tileir.py"):
            shutil.copy(source, folder / source.name)


def test_validate_runs_every_worker_as_a_slurm_step(cluster: Path, tmp_path: Path) -> None:
    _examples(tmp_path)
    result = CliRunner().invoke(app, ["validate", str(tmp_path), "--kernel", "vector_add", "--kernel", "softmax",
                                      "--backend", "interpret", "--executor", "slurm", "--slurm-tasks", "2",
                                      "--slurm-time", "00:10:00", "--json"])
    assert result.exit_code == 0, result.output
    records = json.loads((tmp_path / ".tileiropt" / "validate.json").read_text())["records"]
    assert {r["kernel"] for r in records} == {"vector_add", "softmax"}
    assert all(r["status"] == "pass" and r["provenance"]["worker"] == "slurm" for r in records), records
    log = (cluster / "log" / "slurmctld.log").read_text()  # the controller saw the steps' jobs start and end well
    assert log.count("_slurm_rpc_allocate_resources JobId=") >= 2  # one per shard (two kernels, two tasks)
    assert log.count("WEXITSTATUS 0") >= 2


def test_slurm_executor_without_srun_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no srun on this PATH
    _examples(tmp_path)
    result = CliRunner().invoke(app, ["validate", str(tmp_path), "--kernel", "vector_add", "--executor", "slurm"])
    assert result.exit_code == 2 and "srun is not on PATH" in result.output
