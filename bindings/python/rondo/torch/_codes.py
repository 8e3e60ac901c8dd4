"""rondo's dtype code of each torch dtype it reduces, from the library's
own numbering (rondo._core.DTYPE): the one table rondo.torch's Horovod API
and its torch.distributed backend share. Data movement takes any dtype, as
bytes (UINT8)."""
import torch

from rondo._core import DTYPE, UINT8  # noqa: F401 - UINT8 is for the importers

CODES = {getattr(torch, name): code for name, code in DTYPE.items()}
