"""Local clusters for the multi-worker tests: workers on free ports of 127.0.0.1."""

import json
import socket


def free_ports(count):
    """``count`` TCP ports of 127.0.0.1 that nothing listens on now."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def worker_environments(count=2):
    """For a new cluster of ``count`` workers: each worker's environment (its ``TF_CONFIG``)."""
    workers = [f"127.0.0.1:{port}" for port in free_ports(count)]
    return [
        {
            "TF_CONFIG": json.dumps(
                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}
            )
        }
        for index in range(count)
    ]
