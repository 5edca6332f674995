# sim: see Makefile.am
