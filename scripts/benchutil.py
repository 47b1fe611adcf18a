"""Helpers shared by rperf's benchmark scripts."""
import subprocess
import time


def run_with_peak_rss(cmd):
    """Runs cmd (stdout discarded); returns (stderr text, peak RSS in KiB of cmd's own process,
    sampled from /proc/PID/status VmHWM every 20 ms)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    hwm = 0
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.02)
    _, err = p.communicate()
    return err, hwm
