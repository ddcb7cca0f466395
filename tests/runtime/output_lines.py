"""A child process whose merged stdout and stderr the Python tests read line
by line with deadlines, never with sleeps."""

import queue
import subprocess
import threading
import time


class Process:
    """One child process (a trainer, a launcher); its output, line by line."""

    def __init__(self, command, env):
        self.proc = subprocess.Popen(command, env=env, text=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.lines = []
        self._queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        with self.proc.stdout:
            for line in self.proc.stdout:
                self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def _read_line(self, deadline):
        """The next line into self.lines; False at the end of the output or the deadline."""
        try:
            line = self._queue.get(timeout=max(deadline - time.monotonic(), 0))
        except queue.Empty:
            return False
        if line is None:
            self._queue.put(None)
            return False
        self.lines.append(line)
        return True

    def wait_line(self, prefix, timeout):
        """The first line (read now or before) that starts with `prefix`, or None."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for line in self.lines[seen:]:
                if line.startswith(prefix):
                    return line
            seen = len(self.lines)
            if not self._read_line(deadline):
                return None

    def finish(self, timeout):
        """The exit code, once the process ended and all its output was read."""
        deadline = time.monotonic() + timeout
        code = self.proc.wait(timeout=timeout)
        while self._read_line(deadline):
            pass
        return code

    def transcript(self):
        return "\n".join(self.lines)
