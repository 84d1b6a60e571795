"""How a fusion is chosen: the adaptive policy and its label-free signals, learned fusion, the measured
default and its selection rule, ``hybrid advise`` and ``hybrid calibrate``."""
