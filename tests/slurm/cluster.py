"""A one-node Slurm cluster for the tests: munged, slurmctld and slurmd (two CPUs) started from Debian's slurm-wlm
and munge packages, everything (key, config, state, spool, logs, sockets) in one folder, on free ports.

Needs root (slurmd starts jobs as their owner). `stop` ends every process it started: the jobs (scancel), the
daemons (run in the foreground, so the pids it holds are theirs, the same as in their pid files), then, each by
its pid, any process that still carries this cluster's SLURM_CONF in its environment (the daemons and everything
they started have it: a job's slurmstepd, which leaves slurmd, and the job's own processes).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "scancel")
START_SECONDS = 60.0
STOP_SECONDS = 20.0


def missing_programs() -> list[str]:
    return [name for name in DAEMONS if shutil.which(name, path=f"{os.environ.get('PATH', '')}:/usr/sbin") is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    def __init__(self, root: Path, cpus: int = 2) -> None:
        self.root, self.cpus = root, cpus
        self.node = socket.gethostname().split(".")[0]
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf), "PATH": f"{os.environ.get('PATH', '')}:/usr/sbin"}
        self.daemons: list[tuple[str, subprocess.Popen[bytes]]] = []

    def _configure(self) -> None:
        for folder in ("munge", "state", "spool", "log"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        (self.root / "munge").chmod(0o755)  # munged wants its socket's folder reachable by every user
        subprocess.run(["mungekey", "--create", "--keyfile", str(self.root / "munge" / "key")], env=self.env,
                       check=True, capture_output=True, timeout=30)
        r = self.root
        self.conf.write_text("\n".join([
            "ClusterName=kittest",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={r}/munge/socket",
            f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={r}/spool",
            f"SlurmctldPidFile={r}/slurmctld.pid",
            f"SlurmdPidFile={r}/slurmd.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmdLogFile={r}/log/slurmd.log",
            # No cgroups: containers and CI runners rarely have a writable cgroup tree.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "MpiDefault=none",
            "ReturnToService=2",
            "SchedulerType=sched/builtin",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN",
            f"PartitionName=kit Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]))

    def _daemon(self, name: str, args: list[str]) -> None:
        log = (self.root / "log" / f"{name}.out").open("wb")
        process = subprocess.Popen([name, *args], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        self.daemons.append((name, process))

    def start(self) -> None:
        self._configure()
        m = self.root / "munge"
        self._daemon("munged", ["--foreground", "--force", "--key-file", str(m / "key"), "--socket", str(m / "socket"),
                                "--pid-file", str(m / "pid"), "--log-file", str(m / "log"),
                                "--seed-file", str(m / "seed")])
        self._until(lambda: (m / "socket").exists(), "munged made no socket")
        self._daemon("slurmctld", ["-D", "-f", str(self.conf)])
        self._daemon("slurmd", ["-D", "-f", str(self.conf)])
        self._until(self._node_idle, f"node {self.node} never became idle")

    def _node_idle(self) -> bool:
        done = self.run("sinfo", "--noheader", "--format=%T", check=False)
        return done.returncode == 0 and done.stdout.strip() == "idle"

    def _until(self, ready: Callable[[], bool], message: str) -> None:
        deadline = time.monotonic() + START_SECONDS
        while not ready():
            for name, process in self.daemons:
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode}:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{message} within {START_SECONDS:.0f} s:\n{self.logs()}")
            time.sleep(0.5)

    def run(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), env=self.env, capture_output=True, text=True, check=check, timeout=timeout)

    def job_state(self, job: str) -> str:
        """COMPLETED, FAILED, CANCELLED, PENDING, RUNNING... of one job (not an array's)."""
        out = self.run("scontrol", "show", "job", job, "--oneliner").stdout
        return next(f.split("=", 1)[1] for f in out.split() if f.startswith("JobState="))

    def logs(self) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            text = path.read_text(errors="replace").splitlines()
            parts.append(f"--- {path.name} (last 30 lines)\n" + "\n".join(text[-30:]))
        return "\n".join(parts)

    def leftovers(self) -> list[int]:
        """Every process left that carries this cluster's SLURM_CONF: slurmstepd, the jobs and their children."""
        mark = f"SLURM_CONF={self.conf}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if mark in (entry / "environ").read_bytes().split(b"\0"):
                        found.append(int(entry.name))
                except OSError:  # gone, or a process of another user
                    continue
        return found

    def stop(self) -> list[int]:
        """Stop every job and daemon; returns the pids that had to be killed after the daemons stopped."""
        if self.daemons:
            self.run("scancel", "--full", "--user", "root", check=False)
            deadline = time.monotonic() + STOP_SECONDS
            while self.run("squeue", "--noheader", check=False).stdout.strip() and time.monotonic() < deadline:
                time.sleep(0.5)
        for _, process in reversed(self.daemons):
            process.terminate()
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_SECONDS)
        self.daemons.clear()
        left = self.leftovers()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        return left
