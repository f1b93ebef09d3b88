"""Start a Python test server through the fork server (zygote.py): ``python launch.py SOCKET SCRIPT ARGS...``
(or ``SOCKET -m MODULE ARGS...``, ``SOCKET -c CODE ARGS...``, as python takes them: serve's tests start
``-m workbench_magic serve`` so).

Stdlib only, so it starts in a few tens of milliseconds. It hands the zygote its argv, working
directory, environment, signal dispositions and its fds 0, 1 and 2; the zygote forks a child
that runs ``SCRIPT ARGS`` on them. The launcher then closes its own stdin and stdout (so EOF on
the pipes is the server's business alone), forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1
and SIGUSR2 to the server, and exits as the server did: the same exit code, or killed by the
same signal. Killing the launcher (SIGKILL) kills the server: the zygote sees the connection
close. Without a zygote (SOCKET missing, refused, or closed before answering) it becomes
``python SCRIPT ARGS`` itself (exec); so it does when the environment sets the interpreter up
differently from the zygote's (PYTHONHASHSEED, PYTHONPATH, PYTHONWARNINGS...).
"""

import marshal
import os
import signal
import socket
import struct
import sys

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_HEADER = struct.Struct("!I")
_PID = struct.Struct("!i")

_server = 0
_pending: list[int] = []


def _forward(signum: int, frame: object) -> None:
    if _server:
        try:
            os.kill(_server, signum)
        except ProcessLookupError:
            pass
    else:
        _pending.append(signum)


def recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the other end closed the connection")
        data += chunk
    return data


def _die_like(status: int) -> None:
    """Exit as a process with wait status `status` did."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            signal.signal(signum, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL, SIGSTOP
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # a signal whose default is not to die: the shell's convention
    os._exit(os.waitstatus_to_exitcode(status))


#: PYTHON* variables a forked server honours as a started one would (the others set the
#: interpreter up at start: the hash seed, warnings, dev mode, the path...; with those the
#: server starts itself).
_FORK_SAFE = {b"PYTHONUNBUFFERED", b"PYTHONIOENCODING", b"PYTHONDONTWRITEBYTECODE", b"PYTHONBREAKPOINT"}


def _forkable() -> bool:
    """Whether a fork of the zygote can be this interpreter's twin (else: exec python)."""
    if sys.warnoptions or sys._xoptions:
        return False
    return not any(k.startswith(b"PYTHON") and k not in _FORK_SAFE for k in os.environb)


def _stdio_settings() -> tuple[list[tuple[str, str]], bool]:
    """How this interpreter set up its standard streams (from the same environment as the server's)."""
    streams = []
    for stream, errors in ((sys.stdin, "strict"), (sys.stdout, "strict"), (sys.stderr, "backslashreplace")):
        if stream is None:
            streams.append(("utf-8", errors))
        else:
            streams.append((stream.encoding, stream.errors or errors))
    return streams, bool(getattr(sys.stdout, "write_through", False))  # python -u, PYTHONUNBUFFERED


def _direct(script_args: list[str], originals: dict[int, object]) -> None:
    """No zygote: become the server itself."""
    for signum, handler in originals.items():
        signal.signal(signum, handler)  # type: ignore[arg-type]
    if _pending:  # a signal came meanwhile: it would have ended the server too
        _die_like(_pending[0])
    os.execv(sys.executable, [sys.executable, *script_args])


def main(argv: list[str] | None = None) -> None:
    """`argv`: SOCKET SCRIPT ARGS..., SOCKET -m MODULE ARGS... or SOCKET -c CODE ARGS... (default: the
    command line's)."""
    global _server
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        sys.stderr.write("usage: launch.py SOCKET (SCRIPT | -m MODULE | -c CODE) [ARGS...]\n")
        sys.exit(2)
    path, script_args = argv[0], argv[1:]
    if not _forkable():
        os.execv(sys.executable, [sys.executable, *script_args])
    ignored = [int(s) for s in signal.valid_signals() if signal.getsignal(s) is signal.SIG_IGN]
    # As `python SCRIPT` starts: the interpreter ignores these itself, they tell nothing inherited.
    ignored = [s for s in ignored if s not in (signal.SIGPIPE, signal.SIGXFSZ)]
    blocked = [int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])]
    originals = {signum: signal.getsignal(signum) for signum in FORWARDED}
    for signum in FORWARDED:
        signal.signal(signum, _forward)

    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        request = marshal.dumps(
            (
                [os.fsencode(a) for a in script_args],
                os.getcwdb(),
                dict(os.environb),
                ignored,
                blocked,
                _stdio_settings(),
            )
        )
        socket.send_fds(sock, [_HEADER.pack(len(request))], [0, 1, 2])
        sock.sendall(request)
        reply = recv_exact(sock, 1 + _PID.size)
        if reply[:1] != b"P":
            raise ConnectionError(f"unexpected reply {reply!r}")
    except OSError:
        _direct(script_args, originals)
        return
    (_server,) = _PID.unpack(reply[1:])
    for signum in _pending:
        _forward(signum, None)

    # The server has its own copies now: the pipes' EOF is its alone.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)

    try:
        reply = recv_exact(sock, 1 + _PID.size)
    except OSError:
        sys.stderr.write("launch.py: lost the zygote before the server ended\n")
        sys.stderr.flush()
        os._exit(1)
    (status,) = _PID.unpack(reply[1:])
    sys.stderr.flush()
    _die_like(status)


if __name__ == "__main__":
    main()
