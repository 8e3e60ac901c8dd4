# rondo for NumPy at 2 rank(s)
needs numpy
test_rondo.py
