"""The rondo Python package: Python over librondo through ctypes, and
rondo/_fast.c, the common all-reduce call in C (optional: where it cannot
be compiled, for want of Python's headers (Debian: python3-dev) or a C
compiler, the package installs without it and that call runs in Python).

Offline, with Debian's setuptools (docs/python.md):
    python3 -m venv --system-site-packages VENV
    VENV/bin/pip install --no-build-isolation --no-index bindings/python
or  python3 -m pip install --no-build-isolation --no-index --target DIR bindings/python
"""
from setuptools import Extension, setup

setup(
    name="rondo",
    version="0.3.0",
    description="MPI-native collective communication: NumPy API and a horovod.torch drop-in",
    packages=["rondo", "rondo.torch", "rondo.torch.distributed"],
    ext_modules=[Extension("rondo._fast", ["rondo/_fast.c"], optional=True)],
    python_requires=">=3.9",
    install_requires=["numpy"],
    extras_require={"torch": ["torch"]},
)
