import os
import subprocess
import sys

from busca.index.home.processes import alive


def test_a_running_process_is_alive_and_an_ended_one_is_not():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid names no process now
    assert alive(os.getpid())
    assert not alive(child.pid)


def test_no_pid_names_a_group_or_every_process():
    assert not alive(0)  # kill(0, 0) would probe our own group, kill(-1, 0) every process
    assert not alive(-1)


def test_another_users_process_is_alive(monkeypatch):
    def refused(pid, signal):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "kill", refused)
    assert alive(12345)
