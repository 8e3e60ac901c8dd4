# rondo.torch: the Horovod API in our own words, at 1 rank(s)
env HOROVOD_TIMELINE=DYNAMIC
needs numpy
needs torch
test_horovod_api.py
