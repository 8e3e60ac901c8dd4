# examples/python/train_sharded.py (ZeRO stage 2 and 3 with torch.distributed's calls) against DDP, at 2 rank(s)
needs numpy
needs torch
test_train_sharded.py
