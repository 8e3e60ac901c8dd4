# rondo.torch (the Horovod drop-in) at 3 rank(s)
needs numpy
needs torch
test_torch.py
