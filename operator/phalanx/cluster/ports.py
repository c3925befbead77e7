"""Free TCP ports on 127.0.0.1, chosen at start so parallel runs never collide on a fixed port."""

from __future__ import annotations

import contextlib
import socket


def free_ports(count: int) -> list[int]:
    """Ports the kernel has just handed out; held together so they are distinct."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()
