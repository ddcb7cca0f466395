"""Ports on 127.0.0.1 that nothing listens on, for the tests' servers."""

import random
import socket

# Below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range,
# 32768 and up by default): a port picked there by binding port 0 may become
# the local end of another test's outgoing connection before the server binds
# it (seen in full ctest -j2 runs: 'Address already in use').
LOWEST = 10000


def first_ephemeral_port():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count=1):
    """A port P with P .. P + count - 1 all free; released on return, so a
    process that names one of them may still take it in between."""
    end = first_ephemeral_port() - count
    while True:
        port = random.randrange(LOWEST, end)
        sockets = [socket.socket() for _ in range(count)]
        try:
            for i, s in enumerate(sockets):
                s.bind(("127.0.0.1", port + i))
            return port
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
