"""PyTorch's CPU kernel families on this machine, for runs that must hold on any CPU.

PyTorch picks its vectorised CPU kernels by instruction set; the environment variable
``ATEN_CPU_CAPABILITY`` forces a family (``default``, ``avx2``, ``avx512``), and with it
another CPU's rounding, on this machine.

    families()        # ['default', 'avx2', 'avx512'] on a CPU with AVX-512
    own()             # the family PyTorch picks here by itself, e.g. 'avx512'
    other()           # another family this CPU has, for a second run ('avx2' here)
"""

import os
import subprocess
import sys

ORDER = ["default", "avx2", "avx512"]


def _capability(env_value=None):
    """The family a fresh Python process gets with ATEN_CPU_CAPABILITY=env_value (None: unset)."""
    env = dict(os.environ)
    env.pop("ATEN_CPU_CAPABILITY", None)
    if env_value:
        env["ATEN_CPU_CAPABILITY"] = env_value
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    return out.strip().lower()


def own():
    """The family PyTorch chooses on this CPU when nothing forces one."""
    return _capability()


def families():
    """Every family this CPU can run, from the plainest to its own."""
    mine = own()
    return ORDER[:ORDER.index(mine) + 1] if mine in ORDER else ["default", mine]


def other():
    """A family this CPU has other than its own (the next plainer one), for a second run."""
    fams = families()
    return fams[-2] if len(fams) > 1 else fams[0]


if __name__ == "__main__":
    print("own:", own(), "· all:", " ".join(families()), "· other:", other())
