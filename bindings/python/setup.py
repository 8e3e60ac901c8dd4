"""The rondo Python package (pure Python over librondo through ctypes).

Offline, with Debian's setuptools (docs/python.md):
    python3 -m venv --system-site-packages VENV
    VENV/bin/pip install --no-build-isolation --no-index bindings/python
or  python3 -m pip install --no-build-isolation --no-index --target DIR bindings/python
"""
from setuptools import setup

setup(
    name="rondo",
    version="0.2.0",
    description="MPI-native collective communication: NumPy API and a horovod.torch drop-in",
    packages=["rondo", "rondo.torch"],
    python_requires=">=3.9",
    install_requires=["numpy"],
    extras_require={"torch": ["torch"]},
)
