# torch.distributed on the "rondo" backend (DDP and every collective) at 3 rank(s)
needs numpy
needs torch
test_torch_distributed.py
