# rondo for NumPy at 2 rank(s), without the compiled rondo/_fast: the same
# tests through the package's Python path alone
needs numpy
env RONDO_PYTHON_FAST=0
test_rondo.py
