"""DuckDB in a process of its own, under a kernel limit on its memory.

DuckDB computes 2,048 rows at a time and holds each chunk's values outside its
``memory_limit``: twenty ``repeat(name, 120)`` columns over a join held 310 MiB against a
32 MiB byte cap (bench/memory.py), and no rule read from the SQL can bound what a row of
lists, lambdas and string splits holds. So the connection lives in a worker process whose
data segment the kernel caps (``RLIMIT_DATA``): past it an allocation fails, DuckDB stops
the query with its own "Out of Memory Error", and the worker and Vouch's process go on.

:class:`WorkerConnection` is the part of ``duckdb.DuckDBPyConnection`` that
``db/duckdb.py`` uses (``execute``, ``fetchone``/``fetchall``/``fetchmany``,
``description``, ``extract_statements``, ``interrupt``, ``close``), each a message over a
pipe. Rows cross the pipe in the batches ``fetch_bounded`` asks for, so the worker holds
one batch of Python values at a time and the byte cap is applied in Vouch's process as
before. ``interrupt`` uses a second pipe, read by a thread of the worker, so a query can
be stopped while the first pipe waits for its answer.

Workers are forked from a small server process (the zygote: this file run as a script)
that has imported DuckDB and nothing of Vouch, started once per process of Vouch's. Opening
a database costs a fork, not an interpreter start, and nothing of the user's program is
imported again in the worker (``multiprocessing``'s start methods re-run the main module).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import weakref
from collections import deque
from multiprocessing.connection import Connection
from types import ModuleType, SimpleNamespace
from typing import Any

# The peak resident memory of the last workers above their own start, in bytes, as each
# closed: read by bench/memory.py and tests/isolation/measure.py, which add it to the memory
# of Vouch's own process. Bounded, so a long-running server does not collect them.
closed_peaks: deque[int] = deque(maxlen=64)
_ZYGOTE: dict[str, Any] = {}
_ZYGOTE_LOCK = threading.Lock()


def _forget_zygote() -> None:
    """In a child forked from Vouch's process: the lock may have been held by another thread
    at the fork, and the zygote's socket is the parent's."""
    global _ZYGOTE_LOCK
    _ZYGOTE_LOCK = threading.Lock()
    _ZYGOTE.clear()


if hasattr(os, "register_at_fork"):  # POSIX; the worker needs fork (see WorkerConnection)
    os.register_at_fork(after_in_child=_forget_zygote)


def _zygote_socket() -> socket.socket:
    """The socket to this process's zygote, started on first use (again after a fork)."""
    if _ZYGOTE.get("pid") != os.getpid() or _ZYGOTE["process"].poll() is not None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # -P: the script's folder (which holds db/duckdb.py) must not shadow the duckdb package.
        # The parent's import path, so the zygote finds the DuckDB this process would import.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        process = subprocess.Popen([sys.executable, "-P", __file__, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                                   stdin=subprocess.DEVNULL, close_fds=True, env=env)
        theirs.close()
        _ZYGOTE.update(pid=os.getpid(), process=process, socket=ours)
    sock: socket.socket = _ZYGOTE["socket"]
    return sock


def _fork_worker(calls: int, interrupts: int) -> int:
    """A new worker serving the two socket descriptors; its process id. A zygote that ended
    since the last request is started again once."""
    with _ZYGOTE_LOCK:
        for attempt in (1, 2):
            try:
                sock = _zygote_socket()
                socket.send_fds(sock, [b"w"], [calls, interrupts])
                answer = b""
                while not answer.endswith(b"\n"):  # the process id, one line
                    part = sock.recv(32)
                    if not part:
                        raise OSError("the DuckDB zygote process ended")
                    answer += part
                return int(answer)
            except OSError:
                _ZYGOTE.clear()
                if attempt == 2:
                    raise
    raise AssertionError("unreachable")  # pragma: no cover


def _zygote(fd: int) -> None:  # pragma: no cover - runs in the zygote
    """Fork one worker per request until Vouch's process goes away."""
    import duckdb  # noqa: F401  (imported once here, so each worker starts with it)

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    # Ctrl-C reaches the whole process group: Vouch's process stops a query through the
    # interrupt pipe, and the zygote ends when that process's socket closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=fd)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(sock, 16, 2)
        except OSError:
            return
        if len(fds) != 2:
            return  # the parent closed its end
        pid = os.fork()
        if pid == 0:
            sock.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _serve(Connection(fds[0]), Connection(fds[1]))
            finally:
                os._exit(0)
        for f in fds:
            os.close(f)
        sock.sendall(f"{pid}\n".encode())


def _data_bytes() -> int | None:
    """The worker's data segment now (VmData): what RLIMIT_DATA counts; None without /proc."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return None  # pragma: no cover


def _peak_bytes() -> int:
    """The worker's resident high-water mark so far."""
    import resource  # (POSIX only, like the worker)

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _serve(calls: Connection, interrupts: Connection) -> None:  # pragma: no cover - runs in the worker
    """The worker's loop: one message in, one answer out, until the pipe closes."""
    import duckdb

    state: dict[str, Any] = {"con": None, "base": _peak_bytes(), "query": 0}

    def stop(query: int | None) -> None:
        con = state["con"]
        if con is not None and (query is None or state["query"] == query):  # a late one stops nothing
            try:
                con.interrupt()
            except duckdb.Error:  # closed meanwhile: nothing runs
                pass

    def listen() -> None:
        while True:
            try:
                query = int(interrupts.recv_bytes())
            except (EOFError, OSError, ValueError):
                # Vouch's process closed the connection or went away: stop whatever runs
                # and end, rather than finish a query nobody will read.
                stop(None)
                os._exit(0)
            stop(query)

    threading.Thread(target=listen, daemon=True).start()
    while True:
        try:
            op, args = calls.recv()
        except (EOFError, OSError):
            return
        try:
            value = _answer(duckdb, state, op, args)
            calls.send(("ok", value))
        except duckdb.Error as exc:
            calls.send(("err", type(exc).__name__, str(exc)))
        except MemoryError:
            calls.send(("err", "OutOfMemoryException",
                        "Out of Memory Error: the DuckDB worker reached its memory limit"))
        except Exception as exc:  # a driver error that is not duckdb.Error: say what it was
            calls.send(("err", "Error", f"{type(exc).__name__}: {exc}"))
        if op == "close":
            return


def _answer(duckdb: ModuleType, state: dict[str, Any], op: str, args: Any) -> Any:  # pragma: no cover - worker
    import resource

    con = state["con"]
    if op == "connect":
        path, read_only = args
        state["con"] = duckdb.connect(path, read_only=read_only)
        return None
    if op == "execute":
        sql, params, state["query"] = args
        con.execute(sql, params) if params is not None else con.execute(sql)
        # The type objects do not pickle; Vouch reads the names.
        return [(d[0], str(d[1]), None, None, None, None, None) for d in con.description or []] or None
    if op == "fetchone":
        return con.fetchone()
    if op == "fetchall":
        return con.fetchall()
    if op == "fetchmany":
        return con.fetchmany(args)
    if op == "extract":
        return [str(st.type) for st in con.extract_statements(args)]
    if op == "limit":
        # The data segment may grow by ``args`` bytes beyond what it holds now. Without
        # /proc (not Linux) the kernel limit is not set: DuckDB's memory_limit and the
        # builders' guard remain (docs/security.md says so).
        now = _data_bytes()
        if now is not None:
            cap = now + int(args)
            resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
        state["base"] = _peak_bytes()
        return now is not None
    if op == "close":
        if con is not None:
            state["con"] = None
            con.close()
        return max(0, _peak_bytes() - state["base"])
    raise ValueError(f"unknown operation {op!r}")


WORKER_ENDED = "the DuckDB worker process ended unexpectedly (it may have run out of memory)"


def _stop(calls: Connection, interrupts: Connection) -> None:
    """Close the pipes, which ends the worker once its query stops (also when its owner
    was dropped unclosed)."""
    for pipe in (calls, interrupts):
        try:
            pipe.close()
        except OSError:  # pragma: no cover - already closed
            pass


class WorkerConnection:
    """A DuckDB connection in a worker process (see the module docstring)."""

    def __init__(self, path: str, *, read_only: bool) -> None:
        import duckdb

        self._duckdb = duckdb
        if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
            raise duckdb.Error("DuckDB databases need a POSIX system (Linux or macOS): Vouch runs DuckDB in a "
                               "forked worker process whose memory it bounds")
        calls, their_calls = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        interrupts, their_interrupts = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.pid = _fork_worker(their_calls.fileno(), their_interrupts.fileno())
        except OSError as exc:
            for s in (calls, interrupts):
                s.close()
            raise duckdb.Error(f"cannot start the DuckDB worker process: {exc}") from None
        finally:
            their_calls.close()
            their_interrupts.close()
        self._calls, self._interrupts = Connection(calls.detach()), Connection(interrupts.detach())
        self._lock = threading.Lock()
        self._closed = False
        self._dead = False
        self.query = 0  # the number of the last query sent: an interrupt names the one it means
        self._owner: int | None = None  # the thread whose query's result the worker holds
        self._description: list[tuple[Any, ...]] | None = None
        self._finalizer = weakref.finalize(self, _stop, self._calls, self._interrupts)
        try:
            self._call("connect", (path, read_only))
        except duckdb.Error:
            self.close()
            raise

    def _call(self, op: str, args: Any = None, *, result: bool = False) -> Any:
        """One message and its answer. ``result``: the call reads the held query result, so
        only the thread that ran that query may make it (an execute claims the result)."""
        me = threading.get_ident()
        with self._lock:
            if result and self._owner != me:
                raise self._duckdb.InvalidInputException(
                    "the DuckDB connection is busy with another thread's query; open one per thread")
            if op == "execute":
                self._owner = None
            if self._closed:
                if self._dead:
                    raise self._duckdb.Error(WORKER_ENDED)
                raise self._duckdb.ConnectionException("Connection already closed!")
            try:
                self._calls.send((op, args))
                reply = self._calls.recv()
            except (EOFError, OSError):
                self._closed = self._dead = True
                self._finalizer()
                raise self._duckdb.Error(WORKER_ENDED) from None
            except BaseException:
                # Interrupted between the question and its answer (Ctrl-C, a signal handler
                # that raises): the answer would reach the next call, so the worker is let go.
                self._closed = self._dead = True
                self._finalizer()
                raise
            if op == "execute" and reply[0] == "ok":
                self._owner, self._description = me, reply[1]
        if reply[0] == "ok":
            return reply[1]
        _, name, message = reply
        kind = getattr(self._duckdb, name, None)
        if not (isinstance(kind, type) and issubclass(kind, self._duckdb.Error)):
            kind = self._duckdb.Error
        raise kind(message)

    def reserve(self) -> int:
        """The number the next query will carry, for an interrupt timer set before it runs."""
        with self._lock:
            self.query += 1
            return self.query

    def execute(self, sql: str, params: list[Any] | None = None, *, query: int | None = None) -> WorkerConnection:
        self._call("execute", (sql, params, self.reserve() if query is None else query))
        return self

    @property
    def description(self) -> list[tuple[Any, ...]] | None:
        with self._lock:
            if self._owner != threading.get_ident():
                return None
            return self._description

    def fetchone(self) -> Any:
        return self._call("fetchone", result=True)

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._call("fetchall", result=True)
        return rows

    def fetchmany(self, n: int) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._call("fetchmany", n, result=True)
        return rows

    def extract_statements(self, sql: str) -> list[SimpleNamespace]:
        return [SimpleNamespace(type=t) for t in self._call("extract", sql)]

    def limit_memory(self, extra_bytes: int) -> None:
        """Let the worker's data segment grow by at most ``extra_bytes`` from now on."""
        self._call("limit", extra_bytes)

    def interrupt(self, query: int | None = None) -> None:
        """Stop query number ``query`` (default: the last sent) if it still runs; safe from
        any thread, and while a call waits."""
        if self._closed:
            return
        try:
            self._interrupts.send_bytes(str(self.query if query is None else query).encode())
        except (OSError, BrokenPipeError):  # pragma: no cover - the worker is gone
            pass

    def close(self) -> None:
        if self._closed:
            return
        try:
            closed_peaks.append(int(self._call("close")))
        except self._duckdb.Error:
            pass
        finally:
            self._closed = True
            self._finalizer()


if __name__ == "__main__":  # pragma: no cover - the zygote, started by _zygote_socket
    _zygote(int(sys.argv[1]))
