"""PreemptionWatcher: the reference's watcher for a controller process.

A job's coordination service runs in lifeboat-launch (node 0's) or in
lifeboat-coordinator, whose preemption watcher follows the workers there.
This class reads it from that process's status endpoint, over HTTP, so a
controller written in Python (a supervisor, a notebook) needs no lifeboat
process of its own: `lifeboat-launch --status-port BASE` serves it at
BASE + nproc, `lifeboat-coordinator --status-port P` at P.
"""

import json
import re
import time
import urllib.request

from lifeboat._lifeboat import ConfigError

# How often block_until_worker_exit asks.
POLL_INTERVAL = 0.2
# The watcher's count of the workers that joined and are still here.
_PRESENT = re.compile(r'^lifeboat_workers_present\{actor="preemption_watcher"\} (\S+)$', re.M)


class PreemptionWatcher:
    """The job's preemption, as the process hosting its coordination service
    sees it. Thread-safe: each call asks the endpoint afresh."""

    def __init__(self, status_address, timeout=3.0):
        """`status_address`: "HOST:PORT" of the coordinator's status endpoint
        ("[ADDRESS]:PORT" for IPv6). `timeout`: seconds each request may take.
        Raises ConfigError when nothing answers there, or when what answers is
        no coordinator's endpoint (a worker's has no preemption watcher)."""
        if not isinstance(status_address, str) or ":" not in status_address:
            raise ConfigError(f"status_address: expected HOST:PORT, got {status_address!r}")
        self._url = f"http://{status_address}"
        self._timeout = timeout
        try:
            status = self._get_json("/status")
        except OSError as e:
            raise ConfigError(f"no status endpoint answers at {status_address}: {e}") from None
        if "preemption" not in status:
            raise ConfigError(f"{status_address} is a worker's status endpoint (rank "
                              f"{status.get('rank')}), not a coordinator's: give the "
                              "launcher's (--status-port BASE: BASE + nproc) or "
                              "lifeboat-coordinator's")
        self._message = self._message_of(status)

    @property
    def preemption_message(self):
        """None until a worker got a notice; then the earliest notice as the
        launcher prints it (rank, reason, source, deadline). Once the endpoint
        no longer answers (its process ended), the last message it gave."""
        try:
            self._message = self._message_of(self._get_json("/status"))
        except OSError:
            pass
        return self._message

    def block_until_worker_exit(self, timeout=None):
        """Blocks until every worker that joined the service has left or was
        lost: True then, False after `timeout` seconds (None: no bound). A
        process that refuses the connection (it ended) counts as one whose
        workers exited: the launcher ends after its workers, and no worker
        trains on without its coordination service. One slow to answer is
        asked again."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                present = _PRESENT.search(self._get_text("/metrics"))
            except OSError as e:
                if _refused(e):
                    return True
                present = None
            if present is not None and float(present.group(1)) == 0:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(POLL_INTERVAL)

    def _get_text(self, path):
        with urllib.request.urlopen(self._url + path, timeout=self._timeout) as reply:
            return reply.read().decode()

    def _get_json(self, path):
        try:
            return json.loads(self._get_text(path))
        except ValueError as e:
            raise OSError(f"{self._url}{path} answered no JSON: {e}") from None

    @staticmethod
    def _message_of(status):
        return status["preemption"]["message"] or None


def _refused(error):
    """Whether nothing listens any more where the endpoint was (urllib wraps
    the socket's error in a URLError's reason)."""
    return isinstance(error, ConnectionRefusedError) or isinstance(
        getattr(error, "reason", None), ConnectionRefusedError)
