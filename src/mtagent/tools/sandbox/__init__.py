"""Commands in a sandbox (issue 37): bubblewrap on Linux — the workspace and a private ``/tmp``
writable, the rest of the file system read-only, the user's secrets hidden, a fresh ``/proc`` and pid
namespace, and no network but the hosts ``sandbox.allow_hosts`` names, reached through a proxy mtagent
runs outside (docs/security.md).

* :mod:`.policy` — what a command may touch (plain data from the settings), and a call's ``needs``;
* :mod:`.bwrap` — the bubblewrap command line, and whether bubblewrap works here;
* :mod:`.proxy` — the allow-list HTTP/CONNECT proxy on a unix socket;
* :mod:`.runtime` — the mode in force (one line when it cannot run), a call's proxy and temp folder.

The process tree inside is the shell tool's (:mod:`~mtagent.tools.shell_runner` runs inside the
sandbox as its subreaper, and bridges the proxy's socket to a loopback port there).
"""

from mtagent.tools.sandbox.bwrap import bwrap_argv, probe
from mtagent.tools.sandbox.policy import NeedError, SandboxPolicy, parse_needs, policy_for
from mtagent.tools.sandbox.proxy import NetworkProxy
from mtagent.tools.sandbox.runtime import (
    SandboxedCall,
    SandboxRequired,
    call_for,
    network_hint,
    shell_commands,
    status,
)

__all__ = [
    "NeedError", "NetworkProxy", "SandboxPolicy", "SandboxedCall", "SandboxRequired", "bwrap_argv", "call_for",
    "network_hint", "parse_needs", "policy_for", "probe", "shell_commands", "status",
]
