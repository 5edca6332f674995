# topo: see Makefile.am
