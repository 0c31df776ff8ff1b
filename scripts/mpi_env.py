"""The MPI environment of scripts/mpi-env.sh as a dict for subprocess (Python callers)."""
import os

_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi-env.sh")


def mpi_env(**extra):
    """os.environ plus every `export KEY=VALUE` of scripts/mpi-env.sh, then `extra`."""
    env = dict(os.environ)
    with open(_FILE) as f:
        for line in f:
            line = line.strip()
            if line.startswith("export ") and "=" in line:
                k, v = line[len("export "):].split("=", 1)
                env[k] = v
    env.update(extra)
    return env
