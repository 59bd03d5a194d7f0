"""A real single-node Slurm (Debian's slurm-wlm + munge) started in a temp dir for a test, stopped by PID.

Recipe: /work/shared/notes/slurm-single-node.md (measured on these machines). Needs root and the packages
(`make install-slurm`, which .ci/run runs); `available()` says why not otherwise.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

MUNGE_DIRS = ("/etc/munge", "/run/munge", "/var/log/munge", "/var/lib/munge")
MUNGE_PID = Path("/run/munge/munged.pid")


def available() -> str | None:
    """None if a cluster can be started here, else the reason."""
    missing = [
        b
        for b in ("munged", "slurmctld", "slurmd", "sbatch", "squeue")
        if not shutil.which(b) and not Path("/usr/sbin", b).exists()
    ]
    if missing:
        return f"not installed: {', '.join(missing)} (make install-slurm)"
    if os.geteuid() != 0:
        return "the single-node Slurm recipe runs its daemons as root"
    return None


def _munge_ok() -> bool:
    try:
        tok = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
        return (
            tok.returncode == 0
            and subprocess.run(["unmunge"], input=tok.stdout, capture_output=True, timeout=10).returncode == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False


def _sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


class SlurmCluster:
    """`with SlurmCluster(tmp) as c:` -> c.env (SLURM_CONF set) for sbatch/squeue/scancel."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.conf = self.root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.pids: list[int] = []  # daemons this object started, stopped in reverse order

    def __enter__(self) -> SlurmCluster:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self) -> None:
        if not _munge_ok():
            for d in MUNGE_DIRS:
                Path(d).mkdir(parents=True, exist_ok=True)
            key = Path("/etc/munge/munge.key")
            if not key.exists():
                key.write_bytes(os.urandom(1024))
            subprocess.run(["chown", "-R", "munge:munge", *MUNGE_DIRS], check=True)
            key.chmod(0o400)
            subprocess.run([_sbin("munged"), "--force"], check=True, timeout=30)
            pid = _pid(MUNGE_PID)
            if pid:
                self.pids.append(pid)
            for _ in range(50):
                if _munge_ok():
                    break
                time.sleep(0.2)
        host = socket.gethostname()
        ctld_port, slurmd_port = _free_ports(2)
        d = self.root
        (d / "state").mkdir(parents=True, exist_ok=True)
        (d / "spool").mkdir(parents=True, exist_ok=True)
        self.conf.write_text(
            "\n".join(
                [
                    "ClusterName=local",
                    f"SlurmctldHost={host}",
                    f"SlurmctldPort={ctld_port}",  # ports of its own: a cluster stopped a moment ago may hold the
                    f"SlurmdPort={slurmd_port}",  # default ones (6817, 6818) until its last job's processes end
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    f"StateSaveLocation={d}/state",
                    f"SlurmdSpoolDir={d}/spool",
                    f"SlurmctldPidFile={d}/slurmctld.pid",
                    f"SlurmdPidFile={d}/slurmd.pid",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    "JobAcctGatherType=jobacct_gather/none",
                    "SchedulerType=sched/backfill",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core",
                    "ReturnToService=2",
                    f"SlurmctldLogFile={d}/slurmctld.log",
                    f"SlurmdLogFile={d}/slurmd.log",
                    "MaxArraySize=1001",
                    "KillWait=5",
                    f"NodeName={host} CPUs={os.cpu_count() or 1} State=UNKNOWN",
                    f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP",
                    "",
                ]
            )
        )
        subprocess.run([_sbin("slurmctld"), "-f", str(self.conf)], check=True, env=self.env, timeout=60)
        self._wait_pid(d / "slurmctld.pid")
        subprocess.run([_sbin("slurmd"), "-f", str(self.conf)], check=True, env=self.env, timeout=60)
        self._wait_pid(d / "slurmd.pid")
        for _ in range(120):
            out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env).stdout
            if "idle" in out or "mixed" in out:
                return
            time.sleep(0.5)
        raise RuntimeError(f"slurm node not idle; see {d}/slurmctld.log and {d}/slurmd.log")

    def _wait_pid(self, path: Path) -> None:
        for _ in range(100):
            pid = _pid(path)
            if pid:
                self.pids.append(pid)
                return
            time.sleep(0.1)
        raise RuntimeError(f"{path}: no pid file")

    def stop(self) -> None:
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):  # wait until it is gone (a restarted test would collide on the ports)
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
        self.pids.clear()

    # ------------------------------------------------------------------ jobs

    def sbatch(self, script: Path) -> str:
        out = subprocess.run(
            ["sbatch", "--parsable", str(script)], capture_output=True, text=True, env=self.env, timeout=60
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip().split(";")[0]

    def queued(self, job: str) -> list[str]:
        out = subprocess.run(
            ["squeue", "-h", "-j", job, "-o", "%i %T"], capture_output=True, text=True, env=self.env
        ).stdout
        return [line for line in out.splitlines() if line.strip()]

    def wait(self, job: str, timeout_s: float = 300) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if not self.queued(job):
                return
            time.sleep(0.5)
        raise TimeoutError(f"job {job} still queued after {timeout_s} s")

    def scancel(self, job_task: str) -> None:
        subprocess.run(["scancel", job_task], check=True, env=self.env, timeout=30)


def _free_ports(n: int) -> list[int]:
    """`n` TCP ports no process listens on now (the kernel's pick for a socket bound to port 0)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
