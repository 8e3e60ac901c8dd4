# rondo for NumPy at 1 rank(s)
needs numpy
test_rondo.py
