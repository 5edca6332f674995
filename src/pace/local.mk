# see Makefile.am
