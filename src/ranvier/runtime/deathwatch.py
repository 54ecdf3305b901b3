"""One line naming a rank that died without a word (docs/faults.md).

A rank killed by SIGKILL (the out-of-memory killer, `kill -9`, a batch system) runs no code of
its own: the launcher ends the other ranks and prints its own report, which names a process id,
not a rank. So on each node the first rank (node rank 0) starts a small process, the death
watch, that every rank of the node connects to over a Unix socket and tells its rank and pid.
Each rank then says how it ends:

- `done` when its interpreter exits normally (atexit);
- `failing` before it reports a failure of its own and stops the job (parallel.stop_every_rank:
  an exception, Ctrl-C, SIGTERM; the engine's crash handler: SIGSEGV and the like).

A connection that closes with neither means the rank died without a word. The first such end,
before any rank said `failing`, is the failed rank: the watch writes one line on the node's
stderr, `ranvier: error: rank 1 of 3 (pid 4016 on host) ended without a word: ...`, and exits.
Ends after a `failing` are the job being stopped, and need no line. On several nodes, the
launcher's stop of the ranks of one node looks like a death to that node's watch: the line then
says so.

The watch runs this file as a script (the standard library only), in a session of its own so
that a Ctrl-C to the terminal's process group is for the ranks alone; it exits when every rank
of its node has gone.
"""
from __future__ import annotations

import atexit
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time

DONE = b"done\n"
FAILING = b"failing\n"
UNCONNECTED_WAIT_S = 60.0       # a watch some rank never connects to ends by itself
# A rank may end before another rank of its node has connected: the watch waits for all of them.


def start(world_size: int, ranks_on_node: int, nodes: int) -> str | None:
    """On a node's first rank: starts the watch; returns its address for the node's ranks (None
    where it cannot be started: no Unix sockets, no process to spare)."""
    if not hasattr(socket, "AF_UNIX"):
        return None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if sys.platform.startswith("linux"):       # the abstract namespace: no file to remove
            address = f"\0ranvier-deathwatch-{os.getpid()}-{os.urandom(6).hex()}"
        else:
            address = os.path.join(tempfile.mkdtemp(prefix="ranvier-deathwatch-"), "socket")
        listener.bind(address)
        listener.listen(ranks_on_node)
        subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), "--watch",
                          str(listener.fileno()), str(world_size), str(ranks_on_node), str(nodes),
                          "" if address.startswith("\0") else address],       # a file to remove at the end
                         pass_fds=(listener.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         cwd="/", start_new_session=True)
    except (OSError, ValueError):
        return None
    finally:
        listener.close()
    return address


class Connection:
    """A rank's end of the watch: says hello now, `done` at a normal exit, `failing` on request."""

    def __init__(self, address: str, rank: int):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(address)
        self.sock.sendall(f"hello {rank} {os.getpid()} {socket.gethostname()}\n".encode())
        atexit.register(self.done)

    def fileno(self) -> int:
        return self.sock.fileno()

    def _say(self, what: bytes) -> None:
        try:
            self.sock.sendall(what)
        except OSError:
            pass

    def done(self) -> None:
        self._say(DONE)

    def failing(self) -> None:
        self._say(FAILING)


def connect(address: str | None, rank: int) -> Connection | None:
    if address is None:
        return None
    try:
        return Connection(address, rank)
    except OSError:
        return None


def death_line(rank: str, size: int, pid: str, host: str, nodes: int) -> str:
    line = (f"ranvier: error: rank {rank} of {size} (pid {pid} on {host}) ended without a word: killed by a "
            f"signal no process can catch (SIGKILL: the out-of-memory killer, kill -9, a batch system)")
    if nodes > 1:
        line += ", or stopped by the launcher after a failure on another node"
    return line + "; the launcher stops every rank"


def _watch(listen_fd: int, size: int, expected: int, nodes: int, socket_file: str) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)        # the job's signals are for the ranks
    listener = socket.socket(fileno=listen_fd)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    said: dict[socket.socket, bytes] = {}
    accepted, stopping = 0, False
    started = time.monotonic()
    try:
        while True:
            if accepted == expected and not said:
                return 0                           # every rank of the node has gone
            if accepted < expected and not said and time.monotonic() - started > UNCONNECTED_WAIT_S:
                return 0                           # ranks that never connect (connect() failed)
            for key, _ in selector.select(timeout=1.0):
                sock = key.fileobj
                if sock is listener:
                    conn, _ = listener.accept()
                    said[conn] = b""
                    selector.register(conn, selectors.EVENT_READ)
                    accepted += 1
                    if accepted == expected:
                        selector.unregister(listener)
                    continue
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                if data:
                    said[sock] += data
                    stopping |= FAILING in said[sock]
                    continue
                words = said.pop(sock)
                selector.unregister(sock)
                sock.close()
                if stopping or DONE in words or FAILING in words:
                    continue
                hello = words.split(b"\n", 1)[0].decode(errors="replace").split()
                if len(hello) == 4 and hello[0] == "hello":
                    line = death_line(hello[1], size, hello[2], hello[3], nodes)
                    try:
                        os.write(2, ("\n" + line + "\n").encode())
                    except OSError:
                        pass
                    return 0
    finally:
        if socket_file:
            try:
                os.unlink(socket_file)
                os.rmdir(os.path.dirname(socket_file))
            except OSError:
                pass


if __name__ == "__main__" and len(sys.argv) == 7 and sys.argv[1] == "--watch":
    fd, size, expected, nodes = (int(a) for a in sys.argv[2:6])
    sys.exit(_watch(fd, size, expected, nodes, sys.argv[6]))
