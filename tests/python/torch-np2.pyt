# rondo.torch (the Horovod drop-in) at 2 rank(s)
needs numpy
needs torch
test_torch.py
