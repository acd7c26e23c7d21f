"""A process that cannot make namespaces, the way Docker's default seccomp profile leaves a container:
`unshare` fails with EPERM in it and in every process it starts (a seccomp filter is inherited)."""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
import sys

# The syscall number of unshare and the audit architecture, per machine.
_ARCHES = {"x86_64": (272, 0xC000003E), "aarch64": (97, 0xC00000B7)}
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_LD_ABS, _JEQ, _RET = 0x20, 0x15, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def can_deny_unshare() -> bool:
    return platform.machine() in _ARCHES


def deny_unshare() -> None:
    """Make `unshare` fail with EPERM in this process and its children, for good."""
    nr, arch = _ARCHES[platform.machine()]
    insns = [
        (_LD_ABS, 0, 0, 4),  # the architecture
        (_JEQ, 0, 3, arch),
        (_LD_ABS, 0, 0, 0),  # the syscall number
        (_JEQ, 0, 1, nr),
        (_RET, 0, 0, _RET_ERRNO | errno.EPERM),
        (_RET, 0, 0, _RET_ALLOW),
    ]
    code = b"".join(struct.pack("HBBI", *i) for i in insns)
    prog = _Prog(len(insns), code)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def skillopt_without_namespaces() -> list[str]:
    """The command that runs `skillopt` (arguments follow) in a process that cannot make namespaces."""
    code = (
        "import sys; from testkit.seccomp import deny_unshare; deny_unshare(); "
        "from skillopt_daemon.entry import main; sys.argv[0] = 'skillopt'; sys.exit(main())"
    )
    return [sys.executable, "-c", code]
