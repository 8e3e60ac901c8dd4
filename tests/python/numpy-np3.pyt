# rondo for NumPy at 3 rank(s)
needs numpy
test_rondo.py
