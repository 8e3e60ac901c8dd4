# rondo.torch (the Horovod drop-in) at 1 rank(s)
needs numpy
needs torch
test_torch.py
