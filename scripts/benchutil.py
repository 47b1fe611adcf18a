"""Helpers shared by rperf's benchmark scripts."""
import os
import subprocess
import tempfile
import time


def run_with_peak_rss(cmd, cwd=None, check=False):
    """Runs cmd (stdout discarded) in cwd; returns (stderr text, peak RSS in KiB of cmd's own
    process, sampled from /proc/PID/status VmHWM every 20 ms). stderr goes to a file, so that a
    command that writes much of it never waits on a full pipe. With check, a command that fails
    raises RuntimeError with its stderr."""
    err, hwm, _ = run_measured(cmd, cwd, check)
    return err, hwm


def run_measured(cmd, cwd=None, check=False):
    """`run_with_peak_rss`, and the CPU seconds (user and system) of cmd and the processes it
    waited for, from wait4."""
    with tempfile.TemporaryFile() as errfile:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errfile, cwd=cwd)
        hwm = 0
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                p.returncode = os.waitstatus_to_exitcode(status)
                break
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            hwm = max(hwm, int(line.split()[1]))
            except OSError:
                pass
            time.sleep(0.02)
        errfile.seek(0)
        err = errfile.read().decode(errors="replace")
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {p.returncode}:\n{err[-2000:]}")
    return err, hwm, usage.ru_utime + usage.ru_stime
