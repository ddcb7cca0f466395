"""Hosts of their own for the Python tests of jobs across hosts, as
tests/support/network_namespaces.hpp makes them for the C++ ones: network
namespaces with addresses 10.77.0.1 .. 10.77.0.N/24 on interface eth0, each a
veth pair whose other end is a port of a bridge in one more namespace, so the
processes in them reach one another only over that network. Creating them
needs root (CAP_NET_ADMIN); where that fails, `ok` is False and the caller
skips. No packet leaves the namespaces, and everything is removed on exit."""

import os
import subprocess

IP = "/usr/sbin/ip"
INTERFACE = "eth0"


class NetworkHosts:
    """`with NetworkHosts(n) as hosts:` n hosts; hosts.command(k, argv) runs
    argv in host k (the process is argv's own: `ip netns exec` execs it)."""

    def __init__(self, count):
        self.count = count
        self.prefix = f"lbpy{os.getpid() % 100000}"
        self.ok = False

    def bridge(self):
        return f"{self.prefix}-br"

    def host(self, k):
        return f"{self.prefix}-h{k}"

    @staticmethod
    def address(k):
        return f"10.77.0.{k + 1}"

    def command(self, k, argv):
        return [IP, "netns", "exec", self.host(k), *argv]

    def _run(self, *args):
        return subprocess.run([IP, *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0

    def __enter__(self):
        br = self.bridge()
        self.ok = (os.access(IP, os.X_OK) and self._run("netns", "add", br) and
                   self._run("-n", br, "link", "add", "br0", "type", "bridge") and
                   self._run("-n", br, "link", "set", "br0", "up"))
        for k in range(self.count):
            if not self.ok:
                break
            host, port = self.host(k), f"p{k}"
            self.ok = (self._run("netns", "add", host) and
                       self._run("-n", host, "link", "add", INTERFACE, "type", "veth", "peer",
                                 "name", port, "netns", br) and
                       self._run("-n", host, "addr", "add", f"{self.address(k)}/24", "dev",
                                 INTERFACE) and
                       self._run("-n", host, "link", "set", INTERFACE, "up") and
                       self._run("-n", host, "link", "set", "lo", "up") and
                       self._run("-n", br, "link", "set", port, "master", "br0") and
                       self._run("-n", br, "link", "set", port, "up"))
        return self

    def __exit__(self, *exc):
        for k in range(self.count):
            self._run("netns", "del", self.host(k))
        self._run("netns", "del", self.bridge())
        return False
